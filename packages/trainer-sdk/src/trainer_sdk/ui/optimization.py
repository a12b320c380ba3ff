"""``trainer ui``'s optimization pages: the JSON behind ``#/optimizations`` (static/
optimization.js), over ``OptimizerClient`` on the UI's own backend.

GET /api/optimizations        the optimization jobs, newest first
GET /api/optimizations/NAME   one job: its trials (parameters, objective, state, pruned-at
                              step), the best trial, each parameter's space (the axes of the
                              parallel-coordinates view), each trial's objective by step and
                              each parameter's share of the objective's variance

A diverged trial's NaN objective is sent as null with ``objectiveNonFinite: "NaN"`` beside it
(the server's strict JSON); it is never the best.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import datetime
from http import HTTPStatus
from typing import Any

from trainer_sdk.client import TrainerClient
from trainer_sdk.optimizer import OptimizationJob, OptimizerClient
from trainer_sdk.optimizer.insight import best_trial, importance
from trainer_sdk.optimizer.types.optimization_types import Trial
from trainer_sdk.optimizer.types.search_types import (
    CategoricalSearchSpace,
    ContinuousSearchSpace,
    Distribution,
)

__all__ = ["OptimizationViews"]

PRUNED = "Pruned"
"""A trial's state once the stopping rule ended it (its TrainJob itself reads Failed)."""


def _age(created: datetime, now: datetime) -> float:
    return max((now - created).total_seconds(), 0.0)


def _space(space: ContinuousSearchSpace | CategoricalSearchSpace) -> dict[str, Any]:
    """An axis of the parallel-coordinates view: a log or linear range, or the choices."""
    if isinstance(space, CategoricalSearchSpace):
        return {"kind": "choice", "choices": [str(choice) for choice in space.choices]}
    log = space.distribution is Distribution.LOG_UNIFORM
    return {"kind": "log" if log else "linear", "min": space.min, "max": space.max}


def _state(trial: Trial) -> str:
    return PRUNED if trial.pruned_at_step is not None else trial.trainjob.status


class OptimizationViews:
    """The optimization jobs of ``client``'s backend, as the pages show them."""

    def __init__(self, client: TrainerClient) -> None:
        self.client = client

    @functools.cached_property
    def optimizer(self) -> OptimizerClient:
        """Made on first use: a page without optimization jobs opens no second connection."""
        from trainer_sdk.backends.kubernetes.backend import KubernetesBackend
        from trainer_sdk.backends.local.backend import LocalBackend

        backend = self.client.backend
        assert isinstance(backend, LocalBackend | KubernetesBackend)  # TrainerClient's two
        return OptimizerClient(backend.config)

    def answer(self, parts: Sequence[str], now: datetime) -> tuple[HTTPStatus, Any]:
        """The status and JSON document for ``GET /api/optimizations/<parts>``."""
        match list(parts):
            case []:
                return HTTPStatus.OK, self.rows(now)
            case [name]:
                try:
                    return HTTPStatus.OK, self.detail(name, now)
                except RuntimeError as error:  # both backends' "no such job"
                    return HTTPStatus.NOT_FOUND, {"error": str(error)}
            case _:
                return HTTPStatus.NOT_FOUND, {
                    "error": f"no API /api/optimizations/{'/'.join(parts)}"
                }

    def rows(self, now: datetime) -> list[dict[str, Any]]:
        """A row per job: status, algorithm, trials run of asked, best objective, age."""
        jobs = sorted(self.optimizer.list_jobs(), key=lambda j: j.creation_timestamp, reverse=True)
        return [self._summary(job, now) for job in jobs]

    def _summary(self, job: OptimizationJob, now: datetime) -> dict[str, Any]:
        best = best_trial(job)
        objective = job.objectives[0]
        return {
            "name": job.name,
            "status": job.status,
            "algorithm": type(job.algorithm).__name__,
            "metric": objective.metric,
            "direction": objective.direction.value,
            "trials": len(job.trials),
            "numTrials": job.trial_config.num_trials,
            "parallelTrials": job.trial_config.parallel_trials,
            "best": None if best is None else best.objective,
            "bestTrial": None if best is None else best.name,
            "created": job.creation_timestamp.isoformat(),
            "age": _age(job.creation_timestamp, now),
            "message": job.message,
        }

    def detail(self, name: str, now: datetime) -> dict[str, Any]:
        """One job with its trials, each trial's objective curve and the parameter importance."""
        job = self.optimizer.get_job(name)
        histories = self.optimizer.backend.trial_histories(name)
        return {
            **self._summary(job, now),
            "parameters": sorted(job.search_space),
            "parameterSpaces": {
                name: _space(space) for name, space in sorted(job.search_space.items())
            },
            "trialList": [
                {
                    "number": number,
                    "name": trial.name,
                    "parameters": trial.parameters,
                    "objective": trial.objective,
                    "state": _state(trial),
                    "prunedAtStep": trial.pruned_at_step,
                }
                for number, trial in enumerate(job.trials)
            ],
            "curves": {
                trial: {"x": sorted(steps), "y": [steps[s] for s in sorted(steps)]}
                for trial, steps in histories.items()
                if steps
            },
            "importance": importance(job),
        }
