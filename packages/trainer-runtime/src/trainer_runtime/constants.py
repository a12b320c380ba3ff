"""Names shared by the framework and its plugins: labels, suffixes, ports and env names.

API names (group, kinds, well-known job and container names) come from ``trainer_api``.
"""

from typing import Final

from trainer_api import (
    ANCESTOR_LABEL,
    CLUSTER_TRAINING_RUNTIME_KIND,
    DATASET_INITIALIZER,
    DEFAULT_MANAGED_BY,
    GROUP,
    JOBSET_API_VERSION,
    MODEL_INITIALIZER,
    NODE,
    TRAIN_JOB_KIND,
    TRAINER_API_VERSION,
    TRAINING_RUNTIME_KIND,
)

__all__ = [
    "ANCESTOR_TRAINER",
    "CLUSTER_TRAINING_RUNTIME_KIND",
    "CONTAINER_TRAINER_PORT",
    "DATASET_INITIALIZER",
    "DEFAULT_MANAGED_BY",
    "INITIALIZER_ENV_STORAGE_URI",
    "JOBSET_API_VERSION",
    "JOB_COMPLETION_INDEX_FIELD_PATH",
    "LABEL_ANCESTOR",
    "LABEL_TRAINJOB_NAME",
    "LAUNCHER",
    "LEGACY_RUNTIME_SNAPSHOT_KEY",
    "MODEL_INITIALIZER",
    "NODE",
    "RUNTIME_KINDS",
    "RUNTIME_SNAPSHOT_KEY",
    "RUNTIME_SNAPSHOT_SUFFIX",
    "TRAINER_API_VERSION",
    "TRAINER_GROUP",
    "TRAINING_RUNTIME_KIND",
    "TRAINJOB_KIND",
]

TRAINER_GROUP: Final = GROUP
TRAINJOB_KIND: Final = TRAIN_JOB_KIND
RUNTIME_KINDS: Final = (CLUSTER_TRAINING_RUNTIME_KIND, TRAINING_RUNTIME_KIND)
LABEL_ANCESTOR: Final = ANCESTOR_LABEL
ANCESTOR_TRAINER: Final = "trainer"
LAUNCHER: Final = "launcher"

CONTAINER_TRAINER_PORT: Final = 29500
JOB_COMPLETION_INDEX_FIELD_PATH: Final = (
    "metadata.annotations['batch.kubernetes.io/job-completion-index']"
)
INITIALIZER_ENV_STORAGE_URI: Final = "STORAGE_URI"

RUNTIME_SNAPSHOT_SUFFIX: Final = "-runtime-snapshot"
RUNTIME_SNAPSHOT_KEY: Final = "runtime"
"""Upstream's data key: the runtime as YAML."""
LEGACY_RUNTIME_SNAPSHOT_KEY: Final = "runtime.json"
"""This project's earlier data key: the runtime as JSON (still read)."""
LABEL_TRAINJOB_NAME: Final = "trainer.kubeflow.org/trainjob-name"
