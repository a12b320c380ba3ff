"""``CheckpointVolume``: the ``train()`` option for "this job checkpoints to volume X"; it sets
the annotations the runtime's Checkpoint plugin turns into the volume, the mount and
``TRAINER_CHECKPOINT_DIR`` (the same on the local backend and in a cluster)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trainer_runtime.plugins.checkpoint import MOUNT_PATH_ANNOTATION, VOLUME_ANNOTATION

from trainer_sdk.options import AnyTrainer

__all__ = ["CheckpointVolume"]


@dataclass
class CheckpointVolume:
    """Checkpoint to the PersistentVolumeClaim ``claim_name`` (a named local volume on the
    local backend), mounted at ``mount_path`` (default ``/checkpoints``)."""

    claim_name: str
    mount_path: str | None = None

    def __call__(self, job_spec: dict[str, Any], trainer: AnyTrainer, backend: object) -> None:
        annotations = job_spec.setdefault("metadata", {}).setdefault("annotations", {})
        annotations[VOLUME_ANNOTATION] = self.claim_name
        if self.mount_path is not None:
            annotations[MOUNT_PATH_ANNOTATION] = self.mount_path
