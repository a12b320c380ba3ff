"""Well-known names of the trainer API: groups, versions, kinds, job, container and env names."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

__all__ = [
    "ANCESTOR_LABEL",
    "CLUSTER_TRAINING_RUNTIME_KIND",
    "DATASET_INITIALIZER",
    "DEFAULT_MANAGED_BY",
    "GROUP",
    "INITIALIZER_VOLUME",
    "KUEUE_MANAGED_BY",
    "MANAGED_BY_VALUES",
    "MODEL_INITIALIZER",
    "NODE",
    "RESERVED_ENV_PREFIXES",
    "TRAINER_API_VERSION",
    "TRAINER_STEP",
    "TRAINING_RUNTIME_KIND",
    "TRAIN_JOB_KIND",
    "VERSION",
]

GROUP: Final = "trainer.kubeflow.org"
VERSION: Final = "v1alpha1"
TRAINER_API_VERSION: Final = f"{GROUP}/{VERSION}"

TRAIN_JOB_KIND: Final = "TrainJob"
TRAINING_RUNTIME_KIND: Final = "TrainingRuntime"
CLUSTER_TRAINING_RUNTIME_KIND: Final = "ClusterTrainingRuntime"

DEFAULT_MANAGED_BY: Final = "trainer.kubeflow.org/trainjob-controller"
KUEUE_MANAGED_BY: Final = "kueue.x-k8s.io/multikueue"
MANAGED_BY_VALUES: Final = (DEFAULT_MANAGED_BY, KUEUE_MANAGED_BY)

NODE: Final = "node"
"""The replicated job, and its container, that run the trainer."""
DATASET_INITIALIZER: Final = "dataset-initializer"
MODEL_INITIALIZER: Final = "model-initializer"
INITIALIZER_VOLUME: Final = "initializer"
"""The volume the initializers write into and the trainer reads from."""
ANCESTOR_LABEL: Final = "trainer.kubeflow.org/trainjob-ancestor-step"
"""The label naming the step (``dataset-initializer``, ``model-initializer``, ``trainer``) of a
replicated job of a runtime."""
TRAINER_STEP: Final = "trainer"
"""The ancestor step of the replicated job that runs the trainer."""

RESERVED_ENV_PREFIXES: Final[Mapping[str, tuple[str, ...]]] = {
    "torch": ("PET_",),
    # Open MPI 4 and 5, then Intel MPI and MPICH (the mpi-runtime launcher env for each).
    "mpi": ("OMPI_MCA_", "PRTE_MCA_", "I_MPI_HYDRA_", "I_MPI_PERHOST", "HYDRA_"),
    "xgboost": ("DMLC_",),
}
"""Env name prefixes the controller sets for each ML policy; a TrainJob must not set them."""
