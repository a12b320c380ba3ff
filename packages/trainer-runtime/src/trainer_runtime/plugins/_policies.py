"""Small lookups every ML-policy plugin needs: the trainer spec, node counts, env checks."""

from __future__ import annotations

from collections.abc import Collection

from trainer_api import FieldError, Trainer, TrainJob

from trainer_runtime import podspecs
from trainer_runtime.info import RuntimeInfo
from trainer_runtime.views import ContainerDoc, env_docs

__all__ = ["apply_trainer_env", "apply_trainer_node_count", "reserved_env_errors", "trainer_spec"]

_NO_TRAINER = Trainer()


def trainer_spec(job: TrainJob) -> Trainer:
    """The TrainJob's ``spec.trainer`` (an empty Trainer when absent; do not change it)."""
    return job.spec.trainer or _NO_TRAINER


def apply_trainer_node_count(info: RuntimeInfo, job: TrainJob) -> int:
    """Set the trainer pod set's count from ``spec.trainer.numNodes``; return the count."""
    trainer = info.trainer_pod_set()
    if trainer is None:
        return 0
    num_nodes = trainer_spec(job).num_nodes
    if num_nodes is not None:
        trainer.count = num_nodes
    return trainer.count


def apply_trainer_env(info: RuntimeInfo, job: TrainJob) -> ContainerDoc | None:
    """Put ``spec.trainer.env`` on the trainer container; return the container (None if absent)."""
    container = info.trainer_container()
    if container is not None:
        podspecs.upsert_env(
            container, env_docs(var.to_dict() for var in trainer_spec(job).env or ())
        )
    return container


def reserved_env_errors(job: TrainJob, reserved: Collection[str], owner: str) -> list[FieldError]:
    """One error per ``spec.trainer.env`` entry whose name the ``owner`` runtime sets itself."""
    return [
        FieldError(
            f"spec.trainer.env[{index}].name",
            f"{var.name} is reserved for the {owner} runtime",
        )
        for index, var in enumerate(trainer_spec(job).env or ())
        if var.name in reserved
    ]
