"""Names shared by the framework and its plugins: labels, suffixes, ports and env names.

API names (group, versions, kinds, well-known job and container names, labels) are
``trainer_api``'s and are used from there; nothing here re-exports or renames them.
"""

from typing import Final

from trainer_api import CLUSTER_TRAINING_RUNTIME_KIND, TRAINING_RUNTIME_KIND

__all__ = [
    "CONTAINER_TRAINER_PORT",
    "INITIALIZER_ENV_STORAGE_URI",
    "JOB_COMPLETION_INDEX_FIELD_PATH",
    "LABEL_TRAINJOB_NAME",
    "LAUNCHER",
    "LEGACY_RUNTIME_SNAPSHOT_KEY",
    "RUNTIME_KINDS",
    "RUNTIME_SNAPSHOT_KEY",
    "RUNTIME_SNAPSHOT_SUFFIX",
]

RUNTIME_KINDS: Final = (CLUSTER_TRAINING_RUNTIME_KIND, TRAINING_RUNTIME_KIND)
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
