"""From an admitted TrainJob to the objects that run it (no lifecycle, no status)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from trainer_runtime import framework
from trainer_runtime.admission import Admission
from trainer_runtime.plan import Observed
from trainer_runtime.registry import PLUGINS
from trainer_runtime.settings import Settings
from trainer_runtime.snapshot import to_snapshot

__all__ = ["render"]


def render(
    admission: Admission,
    observed: Observed | None = None,
    settings: Settings | None = None,
    plugins: Sequence[object] = PLUGINS,
    *,
    snapshot: bool = True,
) -> list[dict[str, Any]]:
    """The manifests for the admitted job: the runtime snapshot ConfigMap, then the plugins'
    objects in registry order (JobSet last); ``snapshot=False`` leaves the snapshot out. Raises
    the admission's ``error`` (InvalidTrainJobError for field errors, BuildError otherwise)."""
    info = admission.fresh_info()
    info.settings = settings or Settings()
    job = admission.job
    framework.run_enforce(info, job, plugins)
    objects = framework.run_build(info, job, observed or Observed(), plugins)
    if not snapshot or admission.runtime is None:
        return objects
    return [to_snapshot(job, admission.runtime.to_dict()), *objects]
