"""``OptimizerClient`` (Kubeflow SDK ``kubeflow.optimizer`` compatible): trials are TrainJobs,
run locally or through an OptimizationJob in a cluster; one search core (Optuna) for both."""

from trainer_sdk.configs import KubernetesBackendConfig, LocalBackendConfig
from trainer_sdk.optimizer.api.optimizer_client import OptimizerClient
from trainer_sdk.optimizer.hyperparameters import get_hyperparameters
from trainer_sdk.optimizer.types.algorithm_types import (
    CmaEsSearch,
    GridSearch,
    MedianStopping,
    QuasiRandomSearch,
    RandomSearch,
    SuccessiveHalving,
    TPESearch,
)
from trainer_sdk.optimizer.types.optimization_types import (
    Objective,
    OptimizationJob,
    Result,
    TrialConfig,
)
from trainer_sdk.optimizer.types.search_types import Search
from trainer_sdk.types import TrainJobTemplate

__all__ = [
    "CmaEsSearch",
    "GridSearch",
    "KubernetesBackendConfig",
    "LocalBackendConfig",
    "MedianStopping",
    "Objective",
    "OptimizationJob",
    "OptimizerClient",
    "QuasiRandomSearch",
    "RandomSearch",
    "Result",
    "Search",
    "SuccessiveHalving",
    "TPESearch",
    "TrainJobTemplate",
    "TrialConfig",
    "get_hyperparameters",
]
