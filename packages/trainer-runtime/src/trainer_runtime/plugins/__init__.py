"""One module per plugin; ``trainer_runtime.registry`` lists them in order."""
