"""``get_hyperparameters``: a trial's parameters from its environment (KEP-3562's
``KUBEFLOW_TRAINER_OPT_<NAME>`` variables), for code that does not take them as arguments."""

from __future__ import annotations

import os

from trainer_api import PARAMETER_ENV_PREFIX

__all__ = ["get_hyperparameters"]


def get_hyperparameters() -> dict[str, str]:
    """``{"lr": "0.01", ...}`` in a trial (names lower-cased), ``{}`` outside one."""
    return {
        name[len(PARAMETER_ENV_PREFIX) :].lower(): value
        for name, value in os.environ.items()
        if name.startswith(PARAMETER_ENV_PREFIX)
    }
