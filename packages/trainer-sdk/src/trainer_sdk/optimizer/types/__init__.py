"""The optimizer's types."""

from trainer_sdk.optimizer.types.algorithm_types import (
    BaseAlgorithm,
    BaseEarlyStopping,
    CmaEsSearch,
    GridSearch,
    MedianStopping,
    QuasiRandomSearch,
    RandomSearch,
    SuccessiveHalving,
    TPESearch,
)
from trainer_sdk.optimizer.types.optimization_types import (
    Direction,
    Metric,
    Objective,
    OptimizationJob,
    Result,
    Trial,
    TrialConfig,
)
from trainer_sdk.optimizer.types.search_types import (
    CategoricalSearchSpace,
    ContinuousSearchSpace,
    Distribution,
    Search,
)

__all__ = [
    "BaseAlgorithm",
    "BaseEarlyStopping",
    "CategoricalSearchSpace",
    "CmaEsSearch",
    "ContinuousSearchSpace",
    "Direction",
    "Distribution",
    "GridSearch",
    "MedianStopping",
    "Metric",
    "Objective",
    "OptimizationJob",
    "QuasiRandomSearch",
    "RandomSearch",
    "Result",
    "Search",
    "SuccessiveHalving",
    "TPESearch",
    "Trial",
    "TrialConfig",
]
