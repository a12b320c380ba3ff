"""The optimizer's constants, also importable as ``trainer_sdk.optimizer.constants.constants``."""

from trainer_sdk.optimizer.constants.constants import *  # noqa: F403 - the package re-exports it
from trainer_sdk.optimizer.constants.constants import __all__ as __all__
