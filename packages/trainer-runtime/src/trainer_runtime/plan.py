"""What ``build`` takes besides the job and runtime (Observed) and what it returns (Plan)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from trainer_api import JobSet, TrainJobStatus

from trainer_runtime.errors import BuildError
from trainer_runtime.manifests import to_doc

__all__ = ["ObjectRef", "Observed", "Plan"]


@dataclass(frozen=True)
class ObjectRef:
    """Which object to delete."""

    api_version: str
    kind: str
    name: str
    namespace: str | None = None


@dataclass(frozen=True)
class Observed:
    """The TrainJob's owned objects as the driver last saw them.

    ``jobset``: the JobSet (a trainer_api JobSet or its manifest dict), None when absent. A dict
    is not parsed: an observed status may leave out counts the model requires (a local
    executor's partial report), and status plugins read only its replicated-job status and
    conditions, through ``jobset_doc``.
    ``objects``: the other owned objects as manifest dicts: the runtime snapshot ConfigMap,
    the MPI SSH Secret, ConfigMaps, PodGroups. Drivers may pass every owned object they see.
    """

    jobset: JobSet | Mapping[str, Any] | None = None
    objects: Sequence[Mapping[str, Any]] = field(default_factory=tuple)

    def jobset_doc(self) -> dict[str, Any] | None:
        """The JobSet as a manifest dict, or None."""
        return to_doc(self.jobset) if self.jobset is not None else None

    def find(self, kind: str, name: str) -> Mapping[str, Any] | None:
        """The observed object of ``kind`` called ``name``, or None."""
        for obj in self.objects:
            if obj.get("kind") == kind and (obj.get("metadata") or {}).get("name") == name:
                return obj
        return None


@dataclass(frozen=True)
class Plan:
    """What a driver must do for one TrainJob.

    ``apply``: manifest dicts for server-side apply, in this order: the runtime snapshot
    ConfigMap, then the plugins' Secrets, ConfigMaps and PodGroups, and the JobSet last, so
    that everything a pod mounts exists before the pods are created.
    ``delete``: objects to delete (the JobSet of a job past its deadline).
    ``status``: the TrainJob status to write (trainer_api TrainJobStatus), None to write nothing.
    ``requeue_after``: when to call ``build`` again even if nothing changes (deadline checks).
    ``error``: why the objects could not be built (the ``Created=False/JobsBuildFailed``
    condition of ``status`` says the same in words); an ``InvalidTrainJobError`` keeps its field
    errors, for drivers that report them to a user (the SDK's local backend).
    """

    apply: tuple[dict[str, Any], ...] = ()
    delete: tuple[ObjectRef, ...] = ()
    status: TrainJobStatus | None = None
    requeue_after: timedelta | None = None
    error: BuildError | None = None
