"""Constants of the Kubeflow Trainer SDK (``kubeflow.trainer.constants``), also importable as
``trainer_sdk.constants.constants`` like upstream's module."""

from trainer_sdk.constants.constants import *  # noqa: F403 - the package re-exports its module
from trainer_sdk.constants.constants import __all__ as __all__
