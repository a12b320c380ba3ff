"""TrainerClient, call-compatible with the Kubeflow Trainer SDK, with a local backend, a Kubernetes backend and the trainer CLI.

Skeleton: this package has no public API yet; its issue will add it.
"""

__all__: list[str] = []
