"""What every optimizer backend provides; waiting is shared."""

from __future__ import annotations

import abc
import time
from collections.abc import Callable, Iterator
from typing import Any

from trainer_sdk import types
from trainer_sdk.optimizer.constants import constants
from trainer_sdk.optimizer.spec import Definition
from trainer_sdk.optimizer.types.optimization_types import OptimizationJob, Result, Trial

__all__ = ["JOB_STATUSES", "OptimizerBackend", "best_result", "best_trial"]

JOB_STATUSES = {
    constants.OPTIMIZATION_JOB_CREATED,
    constants.OPTIMIZATION_JOB_RUNNING,
    constants.OPTIMIZATION_JOB_COMPLETE,
    constants.OPTIMIZATION_JOB_FAILED,
}


def best_trial(job: OptimizationJob) -> Trial | None:
    """The trial the search ranks best (``trainer_search.decide`` rules it for both backends:
    a completed trial with the best finite objective), or None."""
    return next((t for t in job.trials if t.name == job.best_trial_name), None)


def best_result(job: OptimizationJob) -> Result | None:
    """The best finished trial's parameters and metrics, by the first objective."""
    best = best_trial(job)
    return (
        None
        if best is None
        else Result(parameters=dict(best.parameters), metrics=list(best.metrics))
    )


class OptimizerBackend(abc.ABC):
    """Runs optimization jobs somewhere."""

    @abc.abstractmethod
    def optimize(self, trial_template: types.TrainJobTemplate, definition: Definition) -> str:
        """Start an optimization job of ``trial_template`` (``OptimizerClient.optimize`` checked
        the arguments into ``definition``); returns its name."""

    @abc.abstractmethod
    def submit(self, manifest: dict[str, Any]) -> str:
        """Start an OptimizationJob from its manifest (upstream's schema); returns its name."""

    @abc.abstractmethod
    def resume_job(self, name: str) -> None:
        """Go on with an optimization job whose driver stopped (trials are neither lost nor
        run twice)."""

    @abc.abstractmethod
    def list_jobs(self) -> list[OptimizationJob]: ...

    @abc.abstractmethod
    def get_job(self, name: str) -> OptimizationJob: ...

    @abc.abstractmethod
    def get_job_logs(self, name: str, trial_name: str | None, follow: bool) -> Iterator[str]: ...

    @abc.abstractmethod
    def delete_job(self, name: str) -> None: ...

    @abc.abstractmethod
    def get_job_events(self, name: str) -> list[types.Event]: ...

    @abc.abstractmethod
    def trial_histories(self, name: str) -> dict[str, dict[int, float]]:
        """Each trial's first objective by step, as far as it has reported it."""

    def get_best_results(self, name: str) -> Result | None:
        """The best trial so far, or None."""
        return best_result(self.get_job(name))

    def _best_or_first_trial(self, name: str, trial_name: str | None) -> str:
        job = self.get_job(name)
        if trial_name is not None:
            if trial_name not in {t.name for t in job.trials}:
                raise ValueError(f"trial_name: {name} has no trial {trial_name!r}")
            return trial_name
        best = best_trial(job)
        if best is not None:
            return best.name
        if not job.trials:
            raise RuntimeError(f"OptimizationJob {name} has no trials yet")
        return job.trials[0].name

    def wait_for_job_status(
        self,
        name: str,
        status: set[str],
        timeout: int,
        polling_interval: int,
        callbacks: list[Callable[[OptimizationJob], None]] | None = None,
    ) -> OptimizationJob:
        """Poll until the job reaches one of ``status``; RuntimeError when it fails instead."""
        if not status.issubset(JOB_STATUSES):
            raise ValueError(f"Expected status {status} must be a subset of {JOB_STATUSES}")
        if polling_interval <= 0:
            raise ValueError(
                "Polling interval must be a positive number, "
                f"got polling_interval={polling_interval}"
            )
        if polling_interval >= timeout:
            raise ValueError(
                "Polling interval must be strictly less than timeout. "
                f"Received polling_interval={polling_interval}, timeout={timeout}"
            )
        deadline = time.monotonic() + timeout
        while True:
            job = self.get_job(name)
            for callback in callbacks or []:
                callback(job)
            if job.status == constants.OPTIMIZATION_JOB_FAILED and job.status not in status:
                why = f": {job.message}" if job.message else ""
                raise RuntimeError(f"{constants.OPTIMIZATION_JOB_KIND} {name} is Failed{why}")
            if job.status in status:
                return job
            if time.monotonic() >= deadline:
                raise TimeoutError(
                    f"Timeout waiting for {constants.OPTIMIZATION_JOB_KIND} {name} to reach "
                    f"status: {status}"
                )
            self._pause(name, min(polling_interval, max(deadline - time.monotonic(), 0.0)))

    def _pause(self, name: str, seconds: float) -> None:
        """Wait up to ``seconds`` for the job to change (backends may return earlier)."""
        time.sleep(seconds)
