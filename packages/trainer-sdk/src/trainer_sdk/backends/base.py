"""What every backend implements, and the behaviour they share (argument checks, waiting).

A backend is the only door to its jobs' data: the client, the CLI, the UI and the optimizer call
the methods here and never a backend's files or private members, so each works against any
backend (``local``, ``kubernetes``, and ``memory`` for tests). What a backend can do beyond the
common calls, it says in its class attributes (``keeps_metric_history``, ``samples_resources``,
``can_stop``); the calls it cannot serve raise ``TrainerError`` saying why and what to use."""

from __future__ import annotations

import abc
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from trainer_sdk import constants, types
from trainer_sdk.errors import JobFailedError, RuntimeNotFoundError, TrainerError
from trainer_sdk.status import failures
from trainer_sdk.status.runtimes import runtime_from_manifest
from trainer_sdk.training.metrics import MetricPoint

if TYPE_CHECKING:  # options load the API models: reading jobs (trainer list) needs neither
    from trainer_sdk.options import Option

__all__ = [
    "FAILURE_LOG_LINES",
    "PackageSet",
    "ResourceUsage",
    "RuntimeBackend",
    "Volume",
    "check_wait_arguments",
]

FAILURE_LOG_LINES = 20

# Statuses a job does not leave: waiting for another one ends there (RuntimeError).
_ENDED_UNASKED = (constants.TRAINJOB_FAILED, constants.TRAINJOB_STOPPED)

AnyTrainer = types.CustomTrainer | types.CustomTrainerContainer | types.BuiltinTrainer

ResourceUsage = tuple[float, int]
"""What a pod uses: CPU seconds so far (user and system) and resident bytes now."""


class Volume(Protocol):
    """A persistent volume claim a backend keeps beside its jobs."""

    @property
    def namespace(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def path(self) -> Path: ...
    @property
    def size_bytes(self) -> int: ...
    @property
    def jobs(self) -> tuple[str, ...]:
        """The jobs whose pods mount the claim."""


class PackageSet(Protocol):
    """A set of ``packages_to_install`` a backend installed for its jobs."""

    @property
    def path(self) -> Path: ...
    @property
    def requirements(self) -> tuple[str, ...]: ...
    @property
    def size_bytes(self) -> int: ...
    @property
    def last_used(self) -> float:
        """When a job last used it (seconds since the epoch)."""


def check_wait_arguments(status: set[str], timeout: float, polling_interval: float) -> None:
    """ValueError naming the argument when ``wait_for_job_status`` is called wrongly (upstream's
    rules: positive ``timeout`` and ``polling_interval``, ``polling_interval < timeout``)."""
    if not isinstance(status, (set, frozenset, list, tuple)) or not status:
        raise ValueError(
            f"status: expected a non-empty set of {sorted(constants.TRAINJOB_STATUSES)}, "
            f"got {status!r}"
        )
    unknown = set(status) - constants.TRAINJOB_STATUSES
    if unknown:
        raise ValueError(f"status: {sorted(unknown)} not in {sorted(constants.TRAINJOB_STATUSES)}")
    if not isinstance(timeout, (int, float)) or timeout <= 0:
        raise ValueError(f"Timeout must be a positive number, got timeout={timeout!r}")
    if not isinstance(polling_interval, (int, float)) or polling_interval <= 0:
        raise ValueError(
            f"Polling interval must be a positive number, got polling_interval={polling_interval!r}"
        )
    if polling_interval >= timeout:
        raise ValueError(
            "Polling interval must be strictly less than timeout. "
            f"Received polling_interval={polling_interval}, timeout={timeout}"
        )


class RuntimeBackend(abc.ABC):
    """A place where TrainJobs run."""

    kind: ClassVar[str]
    """The backend's name, as ``trainer --backend`` and the UI say it."""
    keeps_metric_history: ClassVar[bool] = False
    """Whether ``get_job_metrics`` gives every point a job recorded (else its latest values)."""
    samples_resources: ClassVar[bool] = False
    """Whether ``sample_job_resources`` gives the CPU and memory of a job's pods."""
    can_stop: ClassVar[bool] = False
    """Whether ``stop_job`` ends a job and keeps it (else only ``delete_job`` ends one)."""

    @abc.abstractmethod
    def runtime_manifests(self) -> dict[str, dict[str, Any]]:
        """The runtimes this backend offers, by name, as manifests."""

    def list_runtimes(self) -> list[types.Runtime]:
        """Every runtime, by name."""
        return [
            runtime_from_manifest(manifest)
            for _, manifest in sorted(self.runtime_manifests().items())
        ]

    def get_runtime(self, name: str) -> types.Runtime:
        """The runtime called ``name``; RuntimeNotFoundError lists the others."""
        return runtime_from_manifest(self.get_runtime_manifest(name))

    def resolve_runtime(self, runtime: str | types.Runtime | None) -> types.Runtime:
        """``runtime`` as ``train`` takes it (a name, a Runtime, or None for the default)."""
        if runtime is None:
            return self.get_runtime(constants.DEFAULT_TRAINING_RUNTIME)
        if isinstance(runtime, str):
            return self.get_runtime(runtime)
        if not isinstance(runtime, types.Runtime):
            raise ValueError(
                "runtime: expected a runtime name or a Runtime from list_runtimes() or "
                f"get_runtime(), got {runtime!r}"
            )
        return runtime

    @abc.abstractmethod
    def train(
        self,
        runtime: str | types.Runtime | None = None,
        initializer: types.Initializer | None = None,
        trainer: AnyTrainer | None = None,
        options: Sequence[Option] | None = None,
    ) -> str: ...

    @abc.abstractmethod
    def submit(self, manifest: dict[str, Any], runtime: dict[str, Any] | None = None) -> str:
        """Create a TrainJob from its manifest (``runtime``: the runtime it references, when that
        is not installed); returns its name."""

    @abc.abstractmethod
    def list_jobs(self, runtime: types.Runtime | None = None) -> list[types.TrainJob]: ...

    @abc.abstractmethod
    def get_job(self, name: str) -> types.TrainJob: ...

    @abc.abstractmethod
    def get_job_logs(
        self, name: str, step: str = constants.NODE + "-0", follow: bool = False
    ) -> Iterator[str]: ...

    @abc.abstractmethod
    def get_job_events(self, name: str) -> list[types.Event]: ...

    @abc.abstractmethod
    def get_job_manifest(self, name: str) -> dict[str, Any]:
        """The TrainJob as the backend holds it, ``status`` included."""

    @abc.abstractmethod
    def get_jobset_manifest(self, name: str) -> dict[str, Any] | None:
        """The JobSet the TrainJob produced (with its status), or None while there is none."""

    def log_length(self, name: str, step: str) -> int | None:
        """How many lines the step's log holds now; None where only reading it all would tell
        (then a reader that wants its tail reads it all)."""
        return None

    def sample_resources(self, names: Sequence[str]) -> dict[str, Mapping[str, ResourceUsage]]:
        """What each running pod of the jobs ``names`` uses now, by job and pod name (``job
        (cgroup)``: a job's own total, where it has one); a job gone meanwhile is left out. Here:
        not supported (``samples_resources`` is False)."""
        raise TrainerError(f"{self.kind}: this backend samples no resources of its jobs' pods")

    @abc.abstractmethod
    def delete_job(self, name: str) -> None: ...

    def suspend_job(self, name: str, suspend: bool) -> None:
        """Set the TrainJob's ``spec.suspend``: True stops its pods (SIGTERM, so the checkpoint
        API saves at the next step), False starts them again. Here: not supported."""
        raise TrainerError(
            f"TrainJob {name!r}: this backend cannot suspend or resume a running job"
        )

    def stop_job(self, name: str) -> None:
        """End the job's processes and keep it (Stopped). Here: not supported."""
        raise TrainerError(
            f"TrainJob {name!r}: a cluster job cannot be stopped and kept; delete it instead"
        )

    def get_runtime_manifest(self, name: str) -> dict[str, Any]:
        """The manifest of the runtime called ``name``; RuntimeNotFoundError lists the others."""
        manifests = self.runtime_manifests()
        if name not in manifests:
            raise RuntimeNotFoundError(name, list(manifests))
        return manifests[name]

    def apply_runtime(self, manifest: dict[str, Any]) -> bool:
        """Create or update a runtime; True when created. Here: not supported."""
        raise TrainerError(
            "apply: on Kubernetes use kubectl; trainer keeps runtimes for the local backend"
        )

    def delete_runtime(self, name: str, kind: str | None = None) -> str:
        """Delete an applied runtime; its kind. Here: not supported."""
        raise TrainerError(
            "delete runtime: on Kubernetes use kubectl; trainer keeps runtimes for the local "
            "backend"
        )

    def list_volumes(self) -> list[Volume]:
        """The persistent volume claims kept beside the jobs. Here: not supported."""
        raise TrainerError(
            f"{self.kind}: volumes are the cluster's PersistentVolumeClaims: use kubectl"
        )

    def delete_volume(self, namespace: str, claim: str) -> Path:
        """Delete a claim's data (RuntimeError while a running job mounts it, ValueError for a
        name the backend cannot place); where it was. Here: not supported."""
        raise TrainerError(
            f"{self.kind}: volumes are the cluster's PersistentVolumeClaims: use kubectl"
        )

    def list_package_sets(self) -> list[PackageSet]:
        """The ``packages_to_install`` sets installed for jobs, most recently used first. Here:
        not supported (a cluster's images carry their packages)."""
        raise TrainerError(f"{self.kind}: jobs install their packages in their own images")

    def prune_package_sets(self, older_than_seconds: float) -> list[PackageSet]:
        """Remove the installed sets no job used for ``older_than_seconds``; those removed.
        Here: not supported."""
        raise TrainerError(f"{self.kind}: jobs install their packages in their own images")

    def get_job_metrics(self, name: str) -> list[MetricPoint]:
        """The job's metric history, by step. Here: the latest numeric values its status
        carries, as one point (a cluster keeps no more; see the README)."""
        job = self.get_job(name)
        reported = job.trainer_status
        if reported is None:
            return []
        values = {}
        for key, value in reported.metrics.items():
            try:
                values[key] = float(value)
            except ValueError:
                continue  # a text metric: not charted
        at = reported.last_updated_time or job.creation_timestamp
        return [MetricPoint(step=0, time=at.timestamp(), rank=0, values=values)] if values else []

    def get_runtime_packages(self, runtime: types.Runtime) -> list[str] | None:
        """The runtime's Python packages (a list locally; printed by a cluster's job)."""
        raise NotImplementedError(
            f"{type(self).__name__} cannot list the packages of runtime {runtime.name!r}"
        )

    def _clock(self) -> float:
        """Seconds on a monotonic clock (tests replace it together with ``_pause``)."""
        return time.monotonic()

    def _pause(self, name: str, seconds: float) -> None:
        """Wait up to ``seconds`` for the job to change (backends may return earlier)."""
        time.sleep(seconds)

    def _failed_step(self, job: types.TrainJob) -> str | None:
        """The step whose pod failed first (by its Failed event), else the first failed step."""
        failed = {step.pod_name: step.name for step in job.steps if step.status == "Failed"}
        if not failed:
            return None
        try:
            events = self.get_job_events(job.name)
        except (NotImplementedError, OSError, RuntimeError):
            events = []
        first = [
            failed[event.involved_object_name]
            for event in sorted(events, key=lambda event: event.event_time)
            if event.reason == "Failed" and event.involved_object_name in failed
        ]
        return first[0] if first else next(iter(failed.values()))

    def failure(self, job: types.TrainJob) -> JobFailedError:
        """The error for a failed job: the user's exception and rank when the log shows them
        (what ``wait_for_job_status`` raises; the UI shows it on a failed job's page)."""
        reason = job.message or "the job failed"
        step = self._failed_step(job)
        if step is None:
            return JobFailedError(job.name, reason)
        try:
            lines = list(self.get_job_logs(job.name, step=step))
        except (OSError, RuntimeError, ValueError):
            lines = []
        summary = failures.summarize(lines)
        if summary is None:
            return JobFailedError(job.name, reason, step, lines[-FAILURE_LOG_LINES:])
        return JobFailedError(
            job.name,
            reason,
            step,
            summary.traceback,
            exception=summary.exception,
            rank=summary.rank,
        )

    def wait_for_job_status(
        self,
        name: str,
        status: set[str] = {constants.TRAINJOB_COMPLETE},  # noqa: B006 - upstream's signature
        timeout: int = 600,
        polling_interval: int = 2,
        callbacks: list[Callable[[types.TrainJob], None]] | None = None,
    ) -> types.TrainJob:
        """Wait until the job reaches one of ``status``; RuntimeError as soon as it fails.

        Each callback gets the TrainJob once per ``polling_interval`` and once more with the job
        that is returned or has failed, as upstream calls them."""
        check_wait_arguments(status, timeout, polling_interval)
        start = self._clock()
        deadline = start + timeout
        next_callback = start
        while True:
            job = self.get_job(name)
            now = self._clock()
            ends = job.status in status or job.status in _ENDED_UNASKED
            if callbacks and (ends or now >= next_callback):
                for callback in callbacks:
                    callback(job)
                next_callback = max(next_callback + polling_interval, now)
            if job.status in status:
                return job
            if job.status == constants.TRAINJOB_FAILED:
                raise self.failure(job)
            if job.status == constants.TRAINJOB_STOPPED:
                raise JobFailedError(name, job.message or constants.TRAINJOB_STOPPED)
            remaining = deadline - self._clock()
            if remaining <= 0:
                raise TimeoutError(
                    f"timeout waiting for TrainJob {name!r} to reach {sorted(status)}; "
                    f"it is {job.status}"
                )
            pause = min(polling_interval, remaining)
            if callbacks:
                pause = min(pause, max(next_callback - now, 0.0))
            self._pause(name, pause)
