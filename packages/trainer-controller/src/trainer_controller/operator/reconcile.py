"""One level-triggered reconcile of one TrainJob: observe, ``build``, apply the Plan, write status.

Idempotent: run it any number of times for the same state and it writes nothing after the first
pass. Objects already as the Plan wants them are not applied again; status is written only when
``build`` says it changed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Final

import trainer_api
from mpi_runtime import SSHKeyPair
from trainer_runtime import (
    Admission,
    InvalidTrainJobError,
    Observed,
    Plan,
    Settings,
    admit,
    build,
    parse_runtime,
    parse_trainjob,
)

from trainer_controller.operator.apiclient import ApiStatusError, KubeClient, resource_path
from trainer_controller.operator.events import EventRecorder
from trainer_controller.operator.informer import CachedReader
from trainer_controller.operator.metrics import OperatorMetrics

__all__ = ["Reconciler", "contains", "status_patch"]

logger = logging.getLogger(__name__)

# The progress endpoint owns status.trainerStatus; the reconcile never writes it.
_PROGRESS_FIELDS: Final = frozenset({"trainerStatus"})
_PLACEHOLDER_KEYS: Final = SSHKeyPair(private_key="", public_key="")


def contains(actual: Any, wanted: Any) -> bool:
    """Whether ``actual`` already holds every field of ``wanted`` with the same value."""
    if isinstance(wanted, Mapping):
        return isinstance(actual, Mapping) and all(
            contains(actual.get(key), value) for key, value in wanted.items()
        )
    if isinstance(wanted, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(wanted)
            and all(contains(have, want) for have, want in zip(actual, wanted, strict=True))
        )
    return bool(actual == wanted)


def status_patch(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """A merge patch of the top-level status fields that changed, leaving trainerStatus alone."""
    patch: dict[str, Any] = {}
    for key in (set(old) | set(new)) - _PROGRESS_FIELDS:
        if old.get(key) != new.get(key):
            patch[key] = new.get(key)
    return patch


def _admit(
    manifest: Mapping[str, Any], runtime: Mapping[str, Any] | None, observed: Observed
) -> Admission:
    """The stored job admitted against its runtime (its snapshot once ``observed`` has it)."""
    job = parse_trainjob(manifest)
    try:
        typed_runtime = parse_runtime(runtime) if runtime is not None else None
    except InvalidTrainJobError as error:
        return Admission(job, None, refusal=error)
    return admit(job, typed_runtime, observed=observed)


@dataclass(frozen=True)
class _Job:
    namespace: str
    name: str
    manifest: dict[str, Any]


class Reconciler:
    """Drives ``build`` for TrainJobs through a KubeClient."""

    def __init__(
        self,
        client: KubeClient,
        events: EventRecorder,
        metrics: OperatorMetrics,
        settings: Settings | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
        reader: CachedReader | None = None,
    ) -> None:
        self._client, self._events, self._metrics = client, events, metrics
        self._reader = reader
        self._settings = settings or Settings()
        self._clock = clock

    async def reconcile(self, namespace: str, name: str) -> float | None:
        """Bring one TrainJob's objects and status in line; the seconds until a requeue, if any."""
        manifest = await self._get(
            resource_path(trainer_api.TRAINER_API_VERSION, "TrainJob", namespace, name)
        )
        self._metrics.record_trainjob((namespace, name), manifest)
        if manifest is None or (manifest.get("metadata") or {}).get("deletionTimestamp"):
            return None  # gone, or going: owner references clean up the rest
        job = _Job(namespace, name, manifest)
        runtime = await self._runtime(job)
        now = self._clock()
        observed, draft = await self._observe(job, runtime, now)
        admission = _admit(manifest, runtime, observed)
        # Nothing to apply: the draft is the plan (the key generator only shapes applied objects).
        plan = build(admission, observed, now, settings=self._settings) if draft.apply else draft
        applied = await self._apply(job, plan, observed)
        status = plan.status.to_dict() if plan.status is not None else None
        if applied:
            # Converge in memory: the status as it is with the objects just applied, so that a
            # new job costs one status write rather than one now and one when the JobSet shows up.
            after = Observed(
                jobset=next((obj for obj in applied if obj["kind"] == "JobSet"), observed.jobset),
                objects=(*observed.objects, *(obj for obj in applied if obj["kind"] != "JobSet")),
            )
            current = trainer_api.TrainJobStatus.model_validate(status) if status else None
            settled = build(
                admission.with_status(current or admission.job.status),
                after,
                now,
                settings=self._settings,
            )
            status = settled.status.to_dict() if settled.status is not None else status
        await self._write_status(job, status)
        return plan.requeue_after.total_seconds() if plan.requeue_after is not None else None

    async def _get(self, path: str) -> dict[str, Any] | None:
        return await (self._reader or self._client).get(path)

    def _wrote(self, obj: Mapping[str, Any]) -> None:
        if self._reader is not None:
            self._reader.remember(obj)

    async def _runtime(self, job: _Job) -> dict[str, Any] | None:
        ref = (job.manifest.get("spec") or {}).get("runtimeRef") or {}
        kind = ref.get("kind") or "ClusterTrainingRuntime"
        if kind not in ("TrainingRuntime", "ClusterTrainingRuntime") or not ref.get("name"):
            return None  # build reports the unsupported reference in the status
        namespace = job.namespace if kind == "TrainingRuntime" else None
        return await self._get(
            resource_path(trainer_api.TRAINER_API_VERSION, kind, namespace, ref["name"])
        )

    async def _observe(
        self, job: _Job, runtime: Mapping[str, Any] | None, now: datetime
    ) -> tuple[Observed, Plan]:
        """The JobSet, and every other object the Plan would apply, as they are now; the draft.

        A draft ``build`` with a placeholder key generator names the objects; only those are read,
        so the cost does not grow with the number of objects in the namespace.
        """
        jobset = await self._get(
            resource_path(trainer_api.JOBSET_API_VERSION, "JobSet", job.namespace, job.name)
        )
        names = build(
            _admit(job.manifest, runtime, Observed(jobset=jobset)),
            Observed(jobset=jobset),
            now,
            settings=Settings(
                ssh_keypair=lambda: _PLACEHOLDER_KEYS, status_server=self._settings.status_server
            ),
        )
        objects = []
        for manifest in names.apply:
            if manifest["kind"] == "JobSet":
                continue
            metadata = manifest["metadata"]
            found = await self._get(
                resource_path(
                    manifest["apiVersion"],
                    manifest["kind"],
                    metadata.get("namespace") or job.namespace,
                    metadata["name"],
                )
            )
            if found is not None:
                objects.append(found)
        return Observed(jobset=jobset, objects=tuple(objects)), names

    async def _apply(self, job: _Job, plan: Plan, observed: Observed) -> list[dict[str, Any]]:
        """Apply what is not yet as planned, delete what the plan deletes; the applied objects."""
        applied: list[dict[str, Any]] = []
        seen: dict[tuple[str, str], Any] = {
            (obj["kind"], obj["metadata"]["name"]): obj for obj in observed.objects
        }
        if observed.jobset is not None:
            seen[("JobSet", job.name)] = observed.jobset_doc()
        for manifest in plan.apply:
            if contains(seen.get((manifest["kind"], manifest["metadata"]["name"])), manifest):
                continue
            try:
                applied.append(await self._client.apply(manifest))
                self._wrote(applied[-1])
            except ApiStatusError as error:
                if not error.transient:
                    await self._events.warn(
                        job.manifest,
                        "CreationFailed",
                        f"{manifest['kind']} {manifest['metadata']['name']}: {error.message}",
                    )
                raise
            self._metrics.writes.labels("apply").inc()
        for ref in plan.delete:
            path = resource_path(
                ref.api_version, ref.kind, ref.namespace or job.namespace, ref.name
            )
            await self._client.delete(path)
            if self._reader is not None:
                self._reader.forget(path)
            self._metrics.writes.labels("delete").inc()
        return applied

    async def _write_status(self, job: _Job, status: Mapping[str, Any] | None) -> None:
        if status is None:
            return
        patch = status_patch(job.manifest.get("status") or {}, status)
        if not patch:
            return
        self._wrote(
            await self._client.merge_patch(
                resource_path(
                    trainer_api.TRAINER_API_VERSION, "TrainJob", job.namespace, job.name, "status"
                ),
                {"status": patch},
            )
        )
        self._metrics.writes.labels("status").inc()
