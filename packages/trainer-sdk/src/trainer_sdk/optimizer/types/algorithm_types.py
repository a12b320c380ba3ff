"""Search algorithms: upstream's ``RandomSearch`` and ``GridSearch``, and TPE, CMA-ES and
quasi-random search beyond them; early-stopping rules (median, successive halving)."""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Final

__all__ = [
    "ALGORITHM_REGISTRY",
    "SEEDED_ALGORITHMS",
    "BaseAlgorithm",
    "BaseEarlyStopping",
    "CmaEsSearch",
    "GridSearch",
    "MedianStopping",
    "QuasiRandomSearch",
    "RandomSearch",
    "SeededAlgorithm",
    "SuccessiveHalving",
    "TPESearch",
]


class BaseAlgorithm(abc.ABC):
    """A search algorithm."""

    @property
    @abc.abstractmethod
    def algorithm_name(self) -> str:
        """The name the search core knows it by."""


@dataclass
class GridSearch(BaseAlgorithm):
    """Every combination of the (categorical) parameters, in order."""

    @property
    def algorithm_name(self) -> str:
        return "grid"


@dataclass
class SeededAlgorithm(BaseAlgorithm):
    """An algorithm that draws at random; ``random_state`` makes its draws reproducible."""

    random_state: int | None = None


@dataclass
class RandomSearch(SeededAlgorithm):
    """Random search; ``random_state`` seeds it."""

    @property
    def algorithm_name(self) -> str:
        return "random"


@dataclass
class TPESearch(SeededAlgorithm):
    """Tree-structured Parzen Estimator (Optuna's ``TPESampler``)."""

    @property
    def algorithm_name(self) -> str:
        return "tpe"


@dataclass
class CmaEsSearch(SeededAlgorithm):
    """CMA-ES over the continuous parameters (Optuna's ``CmaEsSampler``)."""

    @property
    def algorithm_name(self) -> str:
        return "cmaes"


@dataclass
class QuasiRandomSearch(SeededAlgorithm):
    """A scrambled Sobol sequence: covers the space more evenly than random draws."""

    @property
    def algorithm_name(self) -> str:
        return "qmc"


SEEDED_ALGORITHMS: Final[dict[str, type[SeededAlgorithm]]] = {
    "random": RandomSearch,
    "tpe": TPESearch,
    "cmaes": CmaEsSearch,
    "qmc": QuasiRandomSearch,
}
ALGORITHM_REGISTRY: Final[dict[str, type[BaseAlgorithm]]] = {
    "grid": GridSearch,
    **SEEDED_ALGORITHMS,
}


class BaseEarlyStopping(abc.ABC):
    """A rule that stops unpromising trials from their per-step objective."""

    @property
    @abc.abstractmethod
    def rule(self) -> str:
        """The rule's name in the search core."""


@dataclass
class MedianStopping(BaseEarlyStopping):
    """Stop a trial whose objective at a step is worse than the median of earlier trials' there."""

    startup_trials: int = 5
    warmup_steps: int = 0

    @property
    def rule(self) -> str:
        return "median"


@dataclass
class SuccessiveHalving(BaseEarlyStopping):
    """Asynchronous successive halving (ASHA): at steps ``min_resource * reduction_factor**k``
    only the best ``1/reduction_factor`` of the trials there go on."""

    min_resource: int = 1
    reduction_factor: int = 3

    @property
    def rule(self) -> str:
        return "asha"
