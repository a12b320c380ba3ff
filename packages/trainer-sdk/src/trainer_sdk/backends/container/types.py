"""Upstream's ``kubeflow.trainer.backends.container.types``: the container backend's
configuration, importable; ``TrainerClient`` refuses it (the local backend runs processes)."""

from trainer_sdk.configs import ContainerBackendConfig, TrainingRuntimeSource

__all__ = ["ContainerBackendConfig", "TrainingRuntimeSource"]
