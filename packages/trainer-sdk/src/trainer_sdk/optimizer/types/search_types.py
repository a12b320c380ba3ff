"""Search spaces: ``Search.uniform``, ``Search.loguniform``, ``Search.choice``."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

__all__ = ["CategoricalSearchSpace", "ContinuousSearchSpace", "Distribution", "Search"]


class Distribution(Enum):
    """How a continuous parameter is sampled."""

    UNIFORM = "uniform"
    LOG_UNIFORM = "logUniform"


@dataclass
class ContinuousSearchSpace:
    """A float between ``min`` and ``max``."""

    min: float | int
    max: float | int
    distribution: Distribution

    def __post_init__(self) -> None:
        if not (math.isfinite(self.min) and math.isfinite(self.max) and self.min < self.max):
            raise ValueError(f"search space: expected finite min < max, got {self.min}, {self.max}")
        if self.distribution is Distribution.LOG_UNIFORM and self.min <= 0:
            raise ValueError(f"search space: loguniform needs min > 0, got {self.min}")


@dataclass
class CategoricalSearchSpace:
    """One of ``choices`` (as strings, the way upstream passes them to trials)."""

    choices: list[Any]

    def __post_init__(self) -> None:
        if not self.choices:
            raise ValueError("search space: choice needs at least one value")


class Search:
    """Helpers that define a parameter's search space."""

    @staticmethod
    def uniform(min: float, max: float) -> ContinuousSearchSpace:
        """A float sampled uniformly between ``min`` and ``max``."""
        return ContinuousSearchSpace(min, max, Distribution.UNIFORM)

    @staticmethod
    def loguniform(min: float, max: float) -> ContinuousSearchSpace:
        """A float whose logarithm is uniform between ``log(min)`` and ``log(max)``."""
        return ContinuousSearchSpace(min, max, Distribution.LOG_UNIFORM)

    @staticmethod
    def choice(values: Sequence[Any]) -> CategoricalSearchSpace:
        """One of ``values``; a trial gets it as a string (``str(value)``), as upstream's do."""
        return CategoricalSearchSpace([str(value) for value in values])
