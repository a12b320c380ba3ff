"""The built-in ClusterTrainingRuntimes shipped with this package (``runtimes/*.yaml``)."""

from __future__ import annotations

import functools
from importlib import resources

import trainer_api
from trainer_api import ClusterTrainingRuntime

__all__ = ["builtin_runtimes"]


@functools.cache
def _parsed() -> tuple[ClusterTrainingRuntime, ...]:
    folder = resources.files("trainer_runtime") / "runtimes"
    runtimes = []
    for entry in sorted(folder.iterdir(), key=lambda item: item.name):
        if not entry.name.endswith(".yaml"):
            continue
        runtime = trainer_api.parse(entry.read_text(encoding="utf-8"))
        if not isinstance(runtime, ClusterTrainingRuntime):
            raise TypeError(
                f"runtimes/{entry.name}: expected a ClusterTrainingRuntime, "
                f"got {type(runtime).__name__}"
            )
        runtimes.append(runtime)
    return tuple(runtimes)


def builtin_runtimes() -> dict[str, ClusterTrainingRuntime]:
    """The built-in runtimes by name, in file-name order (fresh copies: callers may change them)."""
    return {runtime.metadata.name or "": runtime.model_copy(deep=True) for runtime in _parsed()}
