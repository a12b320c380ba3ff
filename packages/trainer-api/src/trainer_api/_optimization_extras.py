"""What an OptimizationJob asks for beyond upstream's schema, read from its annotations.

``optimization.trainer.kubeflow.org/algorithm: tpe`` (or ``cmaes``, ``qmc``) replaces random
search (``searchAlgorithm.random.seed`` still seeds it); ``optimization.trainer.kubeflow.org/
early-stopping`` holds a JSON ``EarlyStopping``, e.g. ``{"rule": "asha", "reductionFactor": 3}``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Literal

import pydantic

from trainer_api._base import ApiModel
from trainer_api._errors import FieldError
from trainer_api._optimization import (
    ALGORITHM_ANNOTATION,
    EARLY_STOPPING_ANNOTATION,
    EXTRA_ALGORITHMS,
    MAX_FAILED_TRIALS_ANNOTATION,
    OptimizationJob,
    parameter_env_name,
)

__all__ = [
    "EarlyStopping",
    "early_stopping",
    "max_failed_trials",
    "optimization_job_errors",
    "search_algorithm",
]

Algorithm = Literal["random", "grid", "tpe", "cmaes", "qmc"]


class EarlyStopping(ApiModel):
    """A stopping rule over a trial's per-step objective (Optuna's pruners of the same names).

    ``median``: stop a trial whose value at a step is worse than the median of earlier trials at
    that step, after ``startupTrials`` finished trials and ``warmupSteps`` steps. ``asha``:
    asynchronous successive halving with rungs at ``minResource * reductionFactor**k`` steps.
    """

    rule: Literal["median", "asha"]
    startup_trials: int = pydantic.Field(default=5, ge=0)
    warmup_steps: int = pydantic.Field(default=0, ge=0)
    min_resource: int = pydantic.Field(default=1, ge=1)
    reduction_factor: int = pydantic.Field(default=3, ge=2)


def search_algorithm(job: OptimizationJob) -> Algorithm:
    """The algorithm a job runs: its annotation's, else grid or random as its spec says."""
    extra = (job.metadata.annotations or {}).get(ALGORITHM_ANNOTATION)
    if extra in EXTRA_ALGORITHMS:
        return extra  # type: ignore[return-value]  # narrowed by the membership test
    algorithm = job.spec.search_algorithm
    return "grid" if algorithm is not None and algorithm.grid is not None else "random"


def early_stopping(job: OptimizationJob) -> EarlyStopping | None:
    """The job's stopping rule, or None; ValueError when the annotation is invalid."""
    text = (job.metadata.annotations or {}).get(EARLY_STOPPING_ANNOTATION)
    if text is None:
        return None
    try:
        return EarlyStopping.model_validate(json.loads(text))
    except (json.JSONDecodeError, pydantic.ValidationError) as error:
        raise ValueError(
            'expected a JSON object such as {"rule": "asha", "reductionFactor": 3} or '
            f'{{"rule": "median", "warmupSteps": 2}}: {error}'
        ) from None


def max_failed_trials(job: OptimizationJob) -> int | None:
    """How many trials may fail before the job does; None: no limit. ValueError when invalid."""
    text = (job.metadata.annotations or {}).get(MAX_FAILED_TRIALS_ANNOTATION)
    if text is None:
        return None
    if not text.isdigit():
        raise ValueError(f"expected a non-negative decimal integer, got {text!r}")
    return int(text)


def optimization_job_errors(job: OptimizationJob) -> Iterator[FieldError]:
    """Problems with the extension annotations (the schema cannot see them)."""
    annotations = job.metadata.annotations or {}
    where = "metadata.annotations"
    extra = annotations.get(ALGORITHM_ANNOTATION)
    if extra is not None and extra not in EXTRA_ALGORITHMS:
        yield FieldError(
            f"{where}[{ALGORITHM_ANNOTATION}]",
            f"expected one of {', '.join(EXTRA_ALGORITHMS)}, got {extra!r}",
        )
    algorithm = job.spec.search_algorithm
    if extra is not None and algorithm is not None and algorithm.grid is not None:
        yield FieldError(
            f"{where}[{ALGORITHM_ANNOTATION}]",
            "replaces random search: set searchAlgorithm.random, not grid",
        )
    for key, read in (
        (EARLY_STOPPING_ANNOTATION, early_stopping),
        (MAX_FAILED_TRIALS_ANNOTATION, max_failed_trials),
    ):
        try:
            read(job)
        except ValueError as error:
            yield FieldError(f"{where}[{key}]", str(error))
    yield from _env_name_collisions(job)


def _env_name_collisions(job: OptimizationJob) -> Iterator[FieldError]:
    """Parameters whose names differ (``lr``/``LR``, ``l-r``/``l_r``) but reach a trial as one
    ``KUBEFLOW_TRAINER_OPT_<NAME>`` variable: one would silently take the other's value."""
    first: dict[str, tuple[int, str]] = {}
    for index, parameter in enumerate(job.spec.parameters):
        env = parameter_env_name(parameter.name)
        earlier = first.setdefault(env, (index, parameter.name))
        if earlier[1] != parameter.name:  # the same name twice is the list-map rule's
            yield FieldError(
                f"spec.parameters[{index}].name",
                f"{parameter.name!r} and {earlier[1]!r} (spec.parameters[{earlier[0]}]) both "
                f"reach the trial as {env}: rename one",
            )
