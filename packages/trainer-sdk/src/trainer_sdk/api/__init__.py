"""Upstream's ``kubeflow.trainer.api`` path: ``trainer_sdk.api.trainer_client.TrainerClient``."""
