"""The runtime framework that turns a TrainJob into a JobSet: pure, typed, with no I/O.

``build(job, runtime, observed, now) -> Plan`` is the core both drivers call (the operator in
``trainer-controller`` and the SDK's local backend); ``render`` gives the objects for one job;
``admit`` and ``validate`` give the runtime-aware field errors (for the admission webhook and the
local backend alike), ``deprecation_warnings`` and ``runtime_patch_errors`` the checks that need
runtime labels or the live JobSet; ``builtin_runtimes`` are the ClusterTrainingRuntimes shipped
here.
"""

from importlib import metadata as _metadata

from trainer_runtime.admission import deprecation_warnings, runtime_patch_errors
from trainer_runtime.builtin import builtin_runtimes
from trainer_runtime.curve import CurveKeyPair
from trainer_runtime.errors import (
    BuildError,
    InvalidTrainJobError,
    RuntimeFrameworkError,
)
from trainer_runtime.info import PodSet, RuntimeInfo
from trainer_runtime.lifecycle import build, is_finished
from trainer_runtime.plan import ObjectRef, Observed, Plan
from trainer_runtime.registry import PLUGINS
from trainer_runtime.rendering import admission_errors, admit, render, validate
from trainer_runtime.settings import Settings, StatusServer

__version__ = _metadata.version("trainer-runtime")

__all__ = [
    "PLUGINS",
    "BuildError",
    "CurveKeyPair",
    "InvalidTrainJobError",
    "ObjectRef",
    "Observed",
    "Plan",
    "PodSet",
    "RuntimeFrameworkError",
    "RuntimeInfo",
    "Settings",
    "StatusServer",
    "__version__",
    "admission_errors",
    "admit",
    "build",
    "builtin_runtimes",
    "deprecation_warnings",
    "is_finished",
    "render",
    "runtime_patch_errors",
    "validate",
]
