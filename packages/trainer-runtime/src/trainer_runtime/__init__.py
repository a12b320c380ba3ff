"""The runtime framework that turns a TrainJob into a JobSet: pure, typed, with no I/O.

``admit(job, runtime) -> Admission`` checks a TrainJob against its runtime once (defaults, every
field error, the runtime info, warnings: for the admission webhook and the local backend alike);
``build(admission, observed, now) -> Plan`` is the core both drivers call (the operator in
``trainer-controller`` and the SDK's local backend); ``render`` gives the objects for one
admitted job; ``parse_trainjob`` and ``parse_runtime`` are the drivers' edge from manifest dicts;
``builtin_runtimes`` are the ClusterTrainingRuntimes shipped here.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the same names, eagerly, for type checkers
    from trainer_runtime.admission import (
        Admission,
        admit,
        deprecation_warnings,
        runtime_patch_errors,
    )
    from trainer_runtime.builtin import builtin_runtimes
    from trainer_runtime.curve import CurveKeyPair
    from trainer_runtime.errors import BuildError, InvalidTrainJobError, RuntimeFrameworkError
    from trainer_runtime.info import PodSet, RuntimeInfo
    from trainer_runtime.inputs import parse_runtime, parse_trainjob
    from trainer_runtime.lifecycle import build, is_finished
    from trainer_runtime.plan import ObjectRef, Observed, Plan
    from trainer_runtime.registry import PLUGINS
    from trainer_runtime.rendering import render
    from trainer_runtime.settings import Settings, StatusServer

_MODULE_OF: dict[str, str] = {
    "Admission": "trainer_runtime.admission",
    "admit": "trainer_runtime.admission",
    "deprecation_warnings": "trainer_runtime.admission",
    "runtime_patch_errors": "trainer_runtime.admission",
    "builtin_runtimes": "trainer_runtime.builtin",
    "CurveKeyPair": "trainer_runtime.curve",
    "BuildError": "trainer_runtime.errors",
    "InvalidTrainJobError": "trainer_runtime.errors",
    "RuntimeFrameworkError": "trainer_runtime.errors",
    "PodSet": "trainer_runtime.info",
    "RuntimeInfo": "trainer_runtime.info",
    "parse_runtime": "trainer_runtime.inputs",
    "parse_trainjob": "trainer_runtime.inputs",
    "build": "trainer_runtime.lifecycle",
    "is_finished": "trainer_runtime.lifecycle",
    "ObjectRef": "trainer_runtime.plan",
    "Observed": "trainer_runtime.plan",
    "Plan": "trainer_runtime.plan",
    "PLUGINS": "trainer_runtime.registry",
    "render": "trainer_runtime.rendering",
    "Settings": "trainer_runtime.settings",
    "StatusServer": "trainer_runtime.settings",
}
"""Where each exported name lives: imported on first use (PEP 562), so that a module of this
package (``trainer_runtime.conditions`` in the local backend's supervisor) costs only itself."""


def __getattr__(name: str) -> Any:
    """The exported ``name``, imported from its module the first time it is asked for."""
    if name == "__version__":
        from importlib import metadata

        value: Any = metadata.version("trainer-runtime")
    elif name in _MODULE_OF:
        value = getattr(importlib.import_module(_MODULE_OF[name]), name)
    else:
        raise AttributeError(f"module 'trainer_runtime' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names (loaded or not) and the module's own dunders."""
    return sorted({*(name for name in globals() if name.startswith("__")), *__all__})


__all__ = [
    "PLUGINS",
    "Admission",
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
    "admit",
    "build",
    "builtin_runtimes",
    "deprecation_warnings",
    "is_finished",
    "parse_runtime",
    "parse_trainjob",
    "render",
    "runtime_patch_errors",
]
