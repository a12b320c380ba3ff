"""Upstream's ``kubeflow.trainer.backends.localprocess.types``: its backend configuration."""

from trainer_sdk.configs import LocalProcessBackendConfig

__all__ = ["LocalProcessBackendConfig"]
