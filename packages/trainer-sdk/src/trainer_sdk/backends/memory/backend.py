"""An in-memory backend for tests: jobs held in this process, run by a function the test gives.

As httpx's ``MockTransport`` answers requests with a function, ``InMemoryBackend(run)`` calls
``run(job)`` with each ``MemoryJob`` that ``train`` or ``submit`` creates; ``run`` (or the test,
later, from any thread) drives the job: ``start()``, ``log(step, *lines)``,
``record(step, **values)``, ``use(pod, cpu_seconds, rss_bytes)``, ``complete()``,
``fail(message)``. Everything a caller asks for (jobs, logs and their following, events,
metrics, manifests, resource samples, stop, suspend and resume, runtimes) comes from those
records through the status mapping every backend shares (``status.jobs.to_train_job``). A job
is admitted and built as the local backend does it (``manifests.admission`` and
``trainer_runtime.build``: the same field errors, the same JobSet); no process starts and no file
is written.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Final

from trainer_sdk import constants, types
from trainer_sdk.backends.base import AnyTrainer, ResourceUsage, RuntimeBackend
from trainer_sdk.errors import InvalidTrainJobError, JobNotFoundError, RuntimeNotFoundError
from trainer_sdk.status.jobs import PodView, derive_status, to_train_job
from trainer_sdk.status.runtimes import runtime_from_manifest
from trainer_sdk.training.metrics import MetricPoint

if TYPE_CHECKING:
    from trainer_sdk.options import Option

__all__ = ["InMemoryBackend", "MemoryJob"]

# Statuses after which nothing of a job runs any more (a followed log ends).
_ENDED: Final = (
    constants.TRAINJOB_COMPLETE,
    constants.TRAINJOB_FAILED,
    constants.TRAINJOB_STOPPED,
    constants.TRAINJOB_SUSPENDED,
)


def _now() -> datetime:
    return datetime.now(timezone.utc)


@dataclass
class MemoryJob:
    """One job's records; its methods are what a run would do, each seen by readers at once."""

    manifest: dict[str, Any]
    runtime: dict[str, Any]
    jobset: dict[str, Any]
    pods: list[PodView]
    changed: threading.Condition = field(repr=False)
    logs: dict[str, list[str]] = field(default_factory=dict)
    events: list[types.Event] = field(default_factory=list)
    metrics: list[MetricPoint] = field(default_factory=list)
    usage: dict[str, ResourceUsage] = field(default_factory=dict)
    restarts: int = 0

    @property
    def name(self) -> str:
        return str(self.manifest["metadata"]["name"])

    @property
    def status(self) -> str:
        """The job's status as every backend names it (``status.jobs.derive_status``)."""
        return derive_status(self.manifest.get("status") or {}, self.pods)

    def start(self) -> None:
        """Every pod runs."""
        self._phases(constants.POD_RUNNING, "Started")

    def log(self, step: str, *lines: str) -> None:
        """Lines the step's pod printed."""
        with self.changed:
            self.logs.setdefault(step, []).extend(lines)
            self.changed.notify_all()

    def record(self, step: int, rank: int = 0, **values: float) -> None:
        """What ``log_metrics`` recorded at ``step`` on ``rank``."""
        with self.changed:
            self.metrics.append(MetricPoint(step, time.time(), rank, dict(values)))
            self.changed.notify_all()

    def use(self, pod: str, cpu_seconds: float, rss_bytes: int) -> None:
        """What ``pod`` uses now (CPU seconds so far, resident bytes)."""
        with self.changed:
            self.usage[pod] = (cpu_seconds, rss_bytes)

    def complete(self) -> None:
        """Every pod succeeded: the job is Complete."""
        self._phases(constants.POD_SUCCEEDED, "Completed")
        self._condition("Complete", "JobsCompleted", "the JobSet completed")

    def fail(self, message: str, step: str = constants.NODE + "-0") -> None:
        """The pod of ``step`` failed (the others were ended with it): the job is Failed."""
        with self.changed:
            for pod in self.pods:
                if pod.step == step or pod.phase in (constants.POD_RUNNING, constants.POD_PENDING):
                    self._phase(pod, constants.POD_FAILED, "Failed")
        self._condition("Failed", "FailedJobs", message)

    def _phases(self, phase: str, reason: str) -> None:
        with self.changed:
            for pod in self.pods:
                self._phase(pod, phase, reason)
            self.changed.notify_all()

    def _phase(self, pod: PodView, phase: str, reason: str) -> None:
        index = self.pods.index(pod)
        self.pods[index] = PodView(pod.name, pod.step, phase, pod.device, pod.device_count)
        self.events.append(
            types.Event("Pod", pod.name, f"step {pod.step}: {reason.lower()}", reason, _now())
        )

    def _condition(self, kind: str, reason: str, message: str, status: bool = True) -> None:
        """Set the TrainJob's condition ``kind`` (what an operator's ``build`` would)."""
        with self.changed:
            conditions = self.manifest.setdefault("status", {}).setdefault("conditions", [])
            conditions[:] = [c for c in conditions if c.get("type") != kind]
            conditions.append(
                {
                    "type": kind,
                    "status": "True" if status else "False",
                    "reason": reason,
                    "message": message,
                    "lastTransitionTime": _now().isoformat(),
                }
            )
            self.changed.notify_all()


class InMemoryBackend(RuntimeBackend):
    """Jobs in this process's memory; ``run(job)`` is called with each new job (None: jobs wait
    for the test to drive them)."""

    kind = "memory"
    keeps_metric_history = True
    samples_resources = True
    can_stop = True

    def __init__(
        self,
        run: Callable[[MemoryJob], None] | None = None,
        runtimes: Mapping[str, dict[str, Any]] | None = None,
    ) -> None:
        self.run = run
        self.jobs: dict[str, MemoryJob] = {}
        self.changed = threading.Condition()
        if runtimes is None:
            import trainer_runtime

            runtimes = {
                name: runtime.to_dict()
                for name, runtime in trainer_runtime.builtin_runtimes().items()
            }
        self._runtimes = {
            name: copy.deepcopy(dict(manifest)) for name, manifest in runtimes.items()
        }

    # -- runtimes -------------------------------------------------------------------------------
    def runtime_manifests(self) -> dict[str, dict[str, Any]]:
        return copy.deepcopy(self._runtimes)

    def apply_runtime(self, manifest: dict[str, Any]) -> bool:
        name = str(manifest["metadata"]["name"])
        created = name not in self._runtimes
        self._runtimes[name] = copy.deepcopy(manifest)
        return created

    def delete_runtime(self, name: str, kind: str | None = None) -> str:
        if name not in self._runtimes:
            raise KeyError(name)
        return str(self._runtimes.pop(name).get("kind"))

    def get_runtime_packages(self, runtime: types.Runtime) -> list[str]:
        return []

    # -- creating -------------------------------------------------------------------------------
    def train(
        self,
        runtime: str | types.Runtime | None = None,
        initializer: types.Initializer | None = None,
        trainer: AnyTrainer | None = None,
        options: Sequence[Option] | None = None,
    ) -> str:
        from trainer_sdk.manifests.trainjobs import build_trainjob, generate_name

        runtime = self.resolve_runtime(runtime)
        job = build_trainjob(generate_name(), runtime, trainer, initializer, options or (), self)
        return self.submit(job.to_dict(), self.get_runtime_manifest(runtime.name))

    def submit(self, manifest: dict[str, Any], runtime: dict[str, Any] | None = None) -> str:
        """Admit and build the job as the local backend does, keep it, and call ``run`` with
        it."""
        import trainer_runtime
        from trainer_api import FieldError

        from trainer_sdk.manifests import admission

        job = admission.parse_trainjob(manifest)
        reference = job.spec.runtime_ref
        if runtime is None:
            if reference.name not in self._runtimes:
                raise RuntimeNotFoundError(reference.name, list(self._runtimes))
            runtime = self._runtimes[reference.name]
        with self.changed:
            name = job.metadata.name = job.metadata.name or f"job-{len(self.jobs)}"
            if name in self.jobs:
                raise InvalidTrainJobError(
                    [FieldError("metadata.name", f"TrainJob {name!r} already exists")]
                )
            job.metadata.namespace = job.metadata.namespace or "default"
            job.metadata.creation_timestamp = _now()
            admitted = admission.admit(job, admission.parse_runtime(runtime))
            built = trainer_runtime.build(admitted, trainer_runtime.Observed(), _now())
            nodes = (
                (job.spec.trainer.num_nodes if job.spec.trainer else None)
                or runtime_from_manifest(runtime).trainer.num_nodes
                or 1
            )
            record = MemoryJob(
                manifest=admitted.job.to_dict(),
                runtime=copy.deepcopy(runtime),
                jobset=next(obj for obj in built.apply if obj["kind"] == "JobSet"),
                pods=[
                    PodView(f"{name}-node-0-{index}", f"{constants.NODE}-{index}", "Pending")
                    for index in range(nodes)
                ],
                changed=self.changed,
            )
            self.jobs[name] = record
        if self.run is not None:
            self.run(record)
        return name

    # -- reading --------------------------------------------------------------------------------
    def job(self, name: str) -> MemoryJob:
        """The records of the job called ``name`` (to drive it); JobNotFoundError."""
        with self.changed:
            if name not in self.jobs:
                raise JobNotFoundError(name, "memory")
            return self.jobs[name]

    def get_job(self, name: str) -> types.TrainJob:
        record = self.job(name)
        with self.changed:
            return to_train_job(
                copy.deepcopy(record.manifest),
                runtime_from_manifest(record.runtime),
                list(record.pods),
                restarts=record.restarts,
            )

    def list_jobs(self, runtime: types.Runtime | None = None) -> list[types.TrainJob]:
        with self.changed:
            names = list(self.jobs)
        jobs = [self.get_job(name) for name in names]
        if runtime is not None:
            jobs = [job for job in jobs if job.runtime.name == runtime.name]
        return sorted(jobs, key=lambda job: job.creation_timestamp)

    def get_job_manifest(self, name: str) -> dict[str, Any]:
        record = self.job(name)
        with self.changed:
            return copy.deepcopy(record.manifest)

    def get_jobset_manifest(self, name: str) -> dict[str, Any] | None:
        """The JobSet the runtime framework built for the job (what a cluster would run)."""
        record = self.job(name)
        with self.changed:
            return {**copy.deepcopy(record.jobset), "status": {"restarts": record.restarts}}

    def get_job_logs(
        self, name: str, step: str = constants.NODE + "-0", follow: bool = False
    ) -> Iterator[str]:
        record = self.job(name)
        steps = [pod.step for pod in record.pods]
        if step not in steps:
            raise ValueError(
                f"step: TrainJob {name!r} has no step {step!r}; its steps are {', '.join(steps)}"
            )
        if not follow:
            with self.changed:
                return iter(list(record.logs.get(step, [])))
        return self._follow(record, step)

    def _follow(self, record: MemoryJob, step: str) -> Iterator[str]:
        """Lines as they are logged, until the job has ended (or was deleted) and every line
        was read."""
        position = 0
        while True:
            with self.changed:
                lines = record.logs.get(step, [])
                while position == len(lines) and not self._over(record):
                    self.changed.wait()
                    lines = record.logs.get(step, [])
                new, ended = lines[position:], self._over(record)
            position += len(new)
            yield from new
            if ended and not new:
                return

    def _over(self, record: MemoryJob) -> bool:
        return record.status in _ENDED or self.jobs.get(record.name) is not record

    def log_length(self, name: str, step: str) -> int | None:
        record = self.job(name)
        with self.changed:
            return len(record.logs.get(step, []))

    def get_job_events(self, name: str) -> list[types.Event]:
        record = self.job(name)
        with self.changed:
            return sorted(record.events, key=lambda event: event.event_time)

    def get_job_metrics(self, name: str) -> list[MetricPoint]:
        record = self.job(name)
        with self.changed:
            return sorted(record.metrics, key=lambda point: (point.step, point.rank))

    def sample_resources(self, names: Sequence[str]) -> dict[str, Mapping[str, ResourceUsage]]:
        with self.changed:
            return {name: dict(self.jobs[name].usage) for name in names if name in self.jobs}

    def _pause(self, name: str, seconds: float) -> None:
        """Return as soon as any job changes, or after ``seconds``."""
        with self.changed:
            self.changed.wait(seconds)

    # -- suspending and ending ------------------------------------------------------------------
    def suspend_job(self, name: str, suspend: bool) -> None:
        """``spec.suspend``: True ends the pods and reads Suspended; False starts the job again
        (``run`` is called with it once more)."""
        record = self.job(name)
        with self.changed:
            record.manifest.setdefault("spec", {})["suspend"] = suspend or None
            if suspend:
                for pod in record.pods:
                    if pod.phase == constants.POD_RUNNING:
                        record._phase(pod, constants.POD_FAILED, "Suspended")
                record._condition("Suspended", "Suspended", "TrainJob is suspended")
            else:
                record.pods[:] = [PodView(pod.name, pod.step, "Pending") for pod in record.pods]
                record._condition("Suspended", "Resumed", "TrainJob is resumed", status=False)
        if not suspend and self.run is not None:
            self.run(record)

    def stop_job(self, name: str) -> None:
        """The job's pods end and it is kept, Stopped, with its logs and metrics."""
        record = self.job(name)
        with self.changed:
            if record.status in (constants.TRAINJOB_COMPLETE, constants.TRAINJOB_FAILED):
                return
            for pod in record.pods:
                if pod.phase in (constants.POD_RUNNING, constants.POD_PENDING):
                    record._phase(pod, constants.POD_FAILED, "Stopped")
            record._condition("Failed", "Stopped", "the job was stopped")

    def delete_job(self, name: str) -> None:
        self.job(name)
        with self.changed:
            del self.jobs[name]
            self.changed.notify_all()
