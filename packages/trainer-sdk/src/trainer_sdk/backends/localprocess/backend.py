"""Upstream's ``kubeflow.trainer.backends.localprocess.backend``: the local backend, which here
runs the whole JobSet of a TrainJob (every node) instead of one process."""

from trainer_sdk.backends.local.backend import LocalBackend as LocalProcessBackend
from trainer_sdk.configs import LocalProcessBackendConfig

__all__ = ["LocalProcessBackend", "LocalProcessBackendConfig"]
