"""One level-triggered reconcile of one TrainJob: observe, ``build`` once, apply the Plan, write
status.

Idempotent: run it any number of times for the same state and it writes nothing after the first
pass. Objects already as the Plan wants them are not applied again; status is written only when
``build`` says it changed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from typing import Any, Final

import trainer_api
from trainer_api import TrainJob
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

from trainer_controller.operator.apiclient import (
    ApiStatusError,
    KubeClient,
    object_path,
    resource_path,
)
from trainer_controller.operator.events import EventRecorder
from trainer_controller.operator.informer import ObjectCache
from trainer_controller.operator.metrics import OperatorMetrics
from trainer_controller.operator.watching import runtime_path

__all__ = ["Reconciler", "contains", "status_patch"]

logger = logging.getLogger(__name__)

# The progress endpoint owns status.trainerStatus; the reconcile never writes it.
_PROGRESS_FIELDS: Final = frozenset({"trainerStatus"})


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


def _admit(job: TrainJob, runtime: Mapping[str, Any] | None, observed: Observed) -> Admission:
    """The stored job admitted against its runtime (its snapshot once ``observed`` has it)."""
    try:
        typed_runtime = parse_runtime(runtime) if runtime is not None else None
    except InvalidTrainJobError as error:
        return Admission(job, None, refusal=error)
    return admit(job, typed_runtime, observed=observed)


class Reconciler:
    """Drives ``build`` for TrainJobs through a KubeClient."""

    def __init__(
        self,
        client: KubeClient,
        events: EventRecorder,
        metrics: OperatorMetrics,
        settings: Settings | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
        cache: ObjectCache | None = None,
    ) -> None:
        self._client, self._events, self._metrics = client, events, metrics
        self._cache = cache
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
        path = runtime_path(manifest, namespace)
        runtime = await self._get(path) if path is not None else None  # build reports a bad ref
        jobset = await self._get(
            resource_path(trainer_api.JOBSET_API_VERSION, "JobSet", namespace, name)
        )
        owned = self._cache.owned_by(manifest["metadata"]["uid"]) if self._cache else []
        observed = Observed(
            jobset=jobset, objects=tuple(obj for obj in owned if obj["kind"] != "JobSet")
        )
        job, now = parse_trainjob(manifest), self._clock()
        plan = build(_admit(job, runtime, observed), observed, now, settings=self._settings)
        if found := await self._unobserved(namespace, plan, observed):
            # The plan would create objects that exist (the cache had not seen them yet): plan
            # again with them, so that nothing that exists is made anew (an SSH key, a snapshot).
            observed = Observed(jobset=jobset, objects=(*observed.objects, *found))
            plan = build(_admit(job, runtime, observed), observed, now, settings=self._settings)
        await self._apply(manifest, plan, observed)
        await self._write_status(
            manifest, plan.status.to_dict() if plan.status is not None else None
        )
        return plan.requeue_after.total_seconds() if plan.requeue_after is not None else None

    async def _get(self, path: str) -> dict[str, Any] | None:
        """The object from the informer cache, else from the API server (None: it is absent)."""
        if (cached := self._cache.get(path) if self._cache else None) is not None:
            self._metrics.reads.labels("cache").inc()
            return cached
        self._metrics.reads.labels("api").inc()
        found = await self._client.get(path)
        if found is not None:
            self._remember(found)
        return found

    def _remember(self, obj: Mapping[str, Any]) -> None:
        if self._cache is not None:
            self._cache.remember(obj)

    async def _unobserved(
        self, namespace: str, plan: Plan, observed: Observed
    ) -> list[dict[str, Any]]:
        """The objects ``plan`` applies that ``observed`` lacks but that exist (read, so their
        absence is confirmed by the API server)."""
        found = []
        for manifest in plan.apply:
            name = manifest["metadata"]["name"]
            if manifest["kind"] == "JobSet" or observed.find(manifest["kind"], name):
                continue
            obj = await self._get(object_path(manifest, namespace))
            if obj is not None:
                found.append(obj)
        return found

    async def _apply(self, job: Mapping[str, Any], plan: Plan, observed: Observed) -> None:
        """Apply what is not yet as planned, delete what the plan deletes."""
        namespace, name = job["metadata"]["namespace"], job["metadata"]["name"]
        seen: dict[tuple[str, str], Any] = {
            (obj["kind"], obj["metadata"]["name"]): obj for obj in observed.objects
        }
        if observed.jobset is not None:
            seen[("JobSet", name)] = observed.jobset_doc()
        for manifest in plan.apply:
            if contains(seen.get((manifest["kind"], manifest["metadata"]["name"])), manifest):
                continue
            try:
                self._remember(await self._client.apply(manifest))
            except ApiStatusError as error:
                if not error.transient:
                    await self._events.warn(
                        job,
                        "CreationFailed",
                        f"{manifest['kind']} {manifest['metadata']['name']}: {error.message}",
                    )
                raise
            self._metrics.writes.labels("apply").inc()
        for ref in plan.delete:
            path = resource_path(ref.api_version, ref.kind, ref.namespace or namespace, ref.name)
            await self._client.delete(path)
            if self._cache is not None:
                self._cache.forget(path)
            self._metrics.writes.labels("delete").inc()

    async def _write_status(self, job: Mapping[str, Any], status: Mapping[str, Any] | None) -> None:
        patch = status_patch(job.get("status") or {}, status) if status is not None else None
        if not patch:
            return
        path = object_path(job) + "/status"
        self._remember(await self._client.merge_patch(path, {"status": patch}))
        self._metrics.writes.labels("status").inc()
