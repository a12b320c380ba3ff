"""Public data types (``kubeflow.trainer.types``), also importable as ``trainer_sdk.types.types``
like upstream's module."""

from trainer_sdk.types.types import *  # noqa: F403 - the package re-exports its module
from trainer_sdk.types.types import __all__ as __all__
