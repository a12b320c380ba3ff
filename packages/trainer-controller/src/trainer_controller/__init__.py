"""The runtime framework that turns a TrainJob into a JobSet, and the Kubernetes operator,
webhooks and manifests that run it.

``build(job, runtime, observed, now) -> Plan`` is the pure core both drivers call; ``render``
gives the objects for one job (the ``trainer-controller render`` command); ``validate`` gives
the runtime-aware field errors (for the admission webhook).
"""

from trainer_controller.builtin import builtin_runtimes
from trainer_controller.runtime.curve import CurveKeyPair
from trainer_controller.runtime.errors import (
    BuildError,
    InvalidTrainJobError,
    RuntimeFrameworkError,
)
from trainer_controller.runtime.info import PodSet, RuntimeInfo
from trainer_controller.runtime.lifecycle import build, is_finished
from trainer_controller.runtime.plan import ObjectRef, Observed, Plan
from trainer_controller.runtime.registry import PLUGINS
from trainer_controller.runtime.rendering import admit, render, validate
from trainer_controller.runtime.settings import Settings, StatusServer

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
    "admit",
    "build",
    "builtin_runtimes",
    "is_finished",
    "render",
    "validate",
]
