"""Names of the optimizer API, as ``kubeflow.optimizer.constants`` has them (for our
OptimizationJob rather than Katib's Experiment: see the README's deliberate differences)."""

from __future__ import annotations

from typing import Final

from trainer_api import GROUP as _GROUP
from trainer_api import VERSION as _VERSION

__all__ = [
    "API_VERSION",
    "CATEGORICAL_PARAMETERS",
    "DOUBLE_PARAMETER",
    "GROUP",
    "OPTIMIZATION_JOB_COMPLETE",
    "OPTIMIZATION_JOB_CREATED",
    "OPTIMIZATION_JOB_FAILED",
    "OPTIMIZATION_JOB_KIND",
    "OPTIMIZATION_JOB_PLURAL",
    "OPTIMIZATION_JOB_RUNNING",
    "VERSION",
]

GROUP: Final = _GROUP
VERSION: Final = _VERSION
API_VERSION: Final = f"{GROUP}/{VERSION}"
OPTIMIZATION_JOB_KIND: Final = "OptimizationJob"
OPTIMIZATION_JOB_PLURAL: Final = "optimizationjobs"

OPTIMIZATION_JOB_CREATED: Final = "Created"
OPTIMIZATION_JOB_RUNNING: Final = "Running"
OPTIMIZATION_JOB_COMPLETE: Final = "Complete"
OPTIMIZATION_JOB_FAILED: Final = "Failed"

DOUBLE_PARAMETER: Final = "double"
CATEGORICAL_PARAMETERS: Final = "categorical"
