"""What every backend implements, and the behaviour they share (argument checks, waiting)."""

from __future__ import annotations

import abc
import time
from collections.abc import Iterator, Sequence
from typing import Any

from trainer_sdk import constants, types
from trainer_sdk.errors import JobFailedError, RuntimeNotFoundError
from trainer_sdk.options import Option
from trainer_sdk.runtimes import runtime_from_manifest

__all__ = ["FAILURE_LOG_LINES", "RuntimeBackend", "check_wait_arguments"]

FAILURE_LOG_LINES = 20

AnyTrainer = types.CustomTrainer | types.CustomTrainerContainer | types.BuiltinTrainer


def check_wait_arguments(status: set[str], timeout: float, polling_interval: float) -> None:
    """ValueError naming the argument when ``wait_for_job_status`` is called wrongly."""
    if not isinstance(status, (set, frozenset, list, tuple)) or not status:
        raise ValueError(
            f"status: expected a non-empty set of {sorted(constants.TRAINJOB_STATUSES)}, "
            f"got {status!r}"
        )
    unknown = set(status) - constants.TRAINJOB_STATUSES
    if unknown:
        raise ValueError(f"status: {sorted(unknown)} not in {sorted(constants.TRAINJOB_STATUSES)}")
    if not isinstance(timeout, (int, float)) or timeout <= 0:
        raise ValueError(f"timeout: expected a positive number of seconds, got {timeout!r}")
    if not isinstance(polling_interval, (int, float)) or polling_interval <= 0:
        raise ValueError(
            f"polling_interval: expected a positive number of seconds, got {polling_interval!r}"
        )
    if polling_interval > timeout:
        raise ValueError(
            f"polling_interval ({polling_interval}) must not be greater than timeout ({timeout})"
        )


class RuntimeBackend(abc.ABC):
    """A place where TrainJobs run."""

    @abc.abstractmethod
    def _runtime_manifests(self) -> dict[str, dict[str, Any]]:
        """The runtimes this backend offers, by name, as manifests."""

    def list_runtimes(self) -> list[types.Runtime]:
        """Every runtime, by name."""
        return [
            runtime_from_manifest(manifest)
            for _, manifest in sorted(self._runtime_manifests().items())
        ]

    def get_runtime(self, name: str) -> types.Runtime:
        """The runtime called ``name``; RuntimeNotFoundError lists the others."""
        manifests = self._runtime_manifests()
        if name not in manifests:
            raise RuntimeNotFoundError(name, list(manifests))
        return runtime_from_manifest(manifests[name])

    @abc.abstractmethod
    def train(
        self,
        runtime: types.Runtime | None = None,
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
    def delete_job(self, name: str) -> None: ...

    def get_runtime_packages(self, runtime: types.Runtime) -> None:
        """Print the Python packages of the runtime's trainer environment."""
        raise NotImplementedError(
            f"{type(self).__name__} cannot list the packages of runtime {runtime.name!r}"
        )

    def _pause(self, name: str, seconds: float) -> None:
        """Wait up to ``seconds`` for the job to change (backends may return earlier)."""
        time.sleep(seconds)

    def _failure_tail(self, job: types.TrainJob) -> tuple[str | None, list[str]]:
        """The failing step and its last log lines."""
        failed = [step for step in job.steps if step.status == constants.POD_FAILED]
        if not failed:
            return None, []
        try:
            lines = list(self.get_job_logs(job.name, step=failed[0].name))
        except (OSError, RuntimeError):
            lines = []
        return failed[0].name, lines[-FAILURE_LOG_LINES:]

    def wait_for_job_status(
        self,
        name: str,
        status: set[str] = {constants.TRAINJOB_COMPLETE},  # noqa: B006 - upstream's signature
        timeout: int = 600,
        polling_interval: int = 2,
    ) -> types.TrainJob:
        """Wait until the job reaches one of ``status``; RuntimeError as soon as it fails."""
        check_wait_arguments(status, timeout, polling_interval)
        deadline = time.monotonic() + timeout
        while True:
            job = self.get_job(name)
            if job.status in status:
                return job
            if job.status == constants.TRAINJOB_FAILED:
                step, lines = self._failure_tail(job)
                raise JobFailedError(name, job.message or "the job failed", step, lines)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(
                    f"timeout waiting for TrainJob {name!r} to reach {sorted(status)}; "
                    f"it is {job.status}"
                )
            self._pause(name, min(polling_interval, remaining))
