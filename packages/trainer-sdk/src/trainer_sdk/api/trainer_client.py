"""``TrainerClient`` at upstream's import path (``kubeflow.trainer.api.trainer_client``)."""

from trainer_sdk.client import TrainerClient

__all__ = ["TrainerClient"]
