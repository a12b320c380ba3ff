"""The manifests the SDK sends: a TrainJob built from ``train()``'s arguments, a ``TARGET``
resolved, YAML files read as the API server reads them (pure, every backend)."""
