"""What ``OptimizerClient`` takes and returns, as ``kubeflow.optimizer`` 0.5.0 defines it."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum

from trainer_sdk import constants as trainer_constants
from trainer_sdk.optimizer.types.algorithm_types import BaseAlgorithm
from trainer_sdk.optimizer.types.search_types import CategoricalSearchSpace, ContinuousSearchSpace
from trainer_sdk.types import TrainJob

__all__ = ["Direction", "Metric", "Objective", "OptimizationJob", "Result", "Trial", "TrialConfig"]


class Direction(Enum):
    """Whether the objective is maximized or minimized."""

    MAXIMIZE = "maximize"
    MINIMIZE = "minimize"


@dataclass
class Objective:
    """The metric to optimize (default ``loss``) and its direction (default minimize)."""

    metric: str = "loss"
    direction: Direction = Direction.MINIMIZE

    def __post_init__(self) -> None:
        if isinstance(self.direction, str):
            self.direction = Direction(self.direction)


@dataclass
class TrialConfig:
    """How many trials, how many at a time, and how many may fail before the job does."""

    num_trials: int = 10
    parallel_trials: int = 1
    max_failed_trials: int | None = None

    def __post_init__(self) -> None:
        if not 1 <= self.parallel_trials <= self.num_trials:
            raise ValueError(
                "trial_config: expected 1 <= parallel_trials <= num_trials, got "
                f"parallel_trials={self.parallel_trials}, num_trials={self.num_trials}"
            )
        if self.max_failed_trials is not None and self.max_failed_trials < 0:
            raise ValueError(
                f"trial_config.max_failed_trials: expected >= 0, got {self.max_failed_trials}"
            )


@dataclass
class Metric:
    """A metric of a trial: its lowest, highest and latest reported value (as strings)."""

    name: str
    min: str
    max: str
    latest: str


@dataclass
class Result:
    """The best trial's parameters and metrics."""

    parameters: dict[str, str]
    metrics: list[Metric]


@dataclass
class Trial:
    """One trial: its parameters, TrainJob and metrics; ``objective`` and ``pruned_at_step``
    (set when early stopping ended it) go beyond upstream."""

    name: str
    parameters: dict[str, str]
    trainjob: TrainJob
    metrics: list[Metric] = field(default_factory=list)
    objective: float | None = None
    pruned_at_step: int | None = None


@dataclass
class OptimizationJob:
    """An optimization job as the SDK shows it; ``best_trial_name`` (the trial the search ranks
    best: never one whose objective is not finite) and ``message`` (what its status says) go
    beyond upstream."""

    name: str
    search_space: dict[str, ContinuousSearchSpace | CategoricalSearchSpace]
    objectives: list[Objective]
    algorithm: BaseAlgorithm
    trial_config: TrialConfig
    trials: list[Trial]
    creation_timestamp: datetime
    status: str = trainer_constants.UNKNOWN
    best_trial_name: str | None = None
    message: str = ""
