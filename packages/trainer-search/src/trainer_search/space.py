"""What a study searches (typed), what it has tried, and its reading from an OptimizationJob."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from trainer_api import EarlyStopping, OptimizationJob, early_stopping, search_algorithm

__all__ = [
    "Algorithm",
    "Choice",
    "Direction",
    "Domain",
    "Range",
    "Study",
    "TrialRecord",
    "TrialState",
    "Value",
    "assignment_strings",
    "grid_size",
    "study_from_job",
    "value_types",
]

Value = float | int | str
Algorithm = Literal["random", "grid", "tpe", "cmaes", "qmc"]
Direction = Literal["minimize", "maximize"]
TrialState = Literal["running", "complete", "failed", "pruned"]


@dataclass(frozen=True)
class Range:
    """Numbers from ``low`` to ``high``; ``log`` samples the logarithm uniformly."""

    low: float
    high: float
    log: bool = False
    integer: bool = False

    def __post_init__(self) -> None:
        if not self.low < self.high:
            raise ValueError(f"low must be less than high, got {self.low} and {self.high}")
        if self.log and self.low <= 0:
            raise ValueError(f"a log range needs low > 0, got {self.low}")


@dataclass(frozen=True)
class Choice:
    """One of ``choices`` (strings, as the OptimizationJob API holds them)."""

    choices: tuple[str, ...]

    def __post_init__(self) -> None:
        if not self.choices:
            raise ValueError("a choice needs at least one value")


Domain = Range | Choice


@dataclass(frozen=True)
class Study:
    """A search: its space, algorithm, direction, seed and stopping rule."""

    space: Mapping[str, Domain]
    algorithm: Algorithm = "random"
    direction: Direction = "minimize"
    seed: int | None = None
    early_stopping: EarlyStopping | None = None

    def __post_init__(self) -> None:
        if not self.space:
            raise ValueError("space: at least one parameter is needed")
        if self.algorithm == "grid":
            numeric = sorted(name for name, d in self.space.items() if not isinstance(d, Choice))
            if numeric:
                raise ValueError(f"grid search needs choices; {', '.join(numeric)} are ranges")


@dataclass(frozen=True)
class TrialRecord:
    """One trial as far as the search knows it.

    ``steps``: the objective per step (for early stopping); ``checked_step``: the last step
    the stopping rule has looked at; ``engine_state``: what the engine noted for this trial.
    """

    number: int
    parameters: Mapping[str, Value]
    state: TrialState = "running"
    objective: float | None = None
    steps: Mapping[int, float] = field(default_factory=dict)
    checked_step: int | None = None
    engine_state: Mapping[str, Any] = field(default_factory=dict)
    pruned_at_step: int | None = None


def grid_size(study: Study) -> int | None:
    """How many trials a grid holds; None for the other algorithms."""
    if study.algorithm != "grid":
        return None
    return math.prod(len(d.choices) for d in study.space.values() if isinstance(d, Choice))


def assignment_strings(parameters: Mapping[str, Value]) -> dict[str, str]:
    """Parameter values as the API writes them (``repr`` of floats round-trips)."""
    return {
        name: value if isinstance(value, str) else repr(value) for name, value in parameters.items()
    }


def value_types(space: Mapping[str, Domain]) -> dict[str, Literal["float", "int", "str"]]:
    """The Python type each parameter's values have: what ``suggest`` gives a trial, and what
    a trial's ``KUBEFLOW_TRAINER_OPT_<NAME>`` string is read back as."""
    return {
        name: "str" if isinstance(d, Choice) else "int" if d.integer else "float"
        for name, d in space.items()
    }


def study_from_job(job: OptimizationJob) -> Study:
    """The study an OptimizationJob describes (after defaulting); ValueError names the field."""
    space: dict[str, Domain] = {}
    for index, parameter in enumerate(job.spec.parameters):
        search = parameter.search_space
        where = f"spec.parameters[{index}].searchSpace"
        if search.categorical is not None:
            space[parameter.name] = Choice(tuple(search.categorical.choices))
            continue
        bounds = search.uniform or search.log_uniform
        if bounds is None:
            raise ValueError(f"{where}: one of uniform, logUniform, categorical is needed")
        try:
            space[parameter.name] = Range(
                float(bounds.min),
                float(bounds.max),
                log=search.log_uniform is not None,
                integer=bounds.type == "Int",
            )
        except ValueError as error:
            raise ValueError(f"{where}: {error}") from None
    objective = job.spec.objectives[0]
    algorithm = job.spec.search_algorithm
    seed = algorithm.random.seed if algorithm is not None and algorithm.random else None
    return Study(
        space=space,
        algorithm=search_algorithm(job),
        direction="maximize" if objective.direction == "Maximize" else "minimize",
        seed=seed,
        early_stopping=early_stopping(job),
    )
