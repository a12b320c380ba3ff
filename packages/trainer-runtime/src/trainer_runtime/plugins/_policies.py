"""Small lookups every ML-policy plugin needs: the trainer spec, node counts, env checks."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from trainer_api import FieldError

from trainer_runtime import podspecs
from trainer_runtime.info import RuntimeInfo

__all__ = ["apply_trainer_env", "apply_trainer_node_count", "reserved_env_errors", "trainer_spec"]


def trainer_spec(job: Mapping[str, Any]) -> Mapping[str, Any]:
    """The TrainJob's ``spec.trainer`` (empty when absent)."""
    return (job.get("spec") or {}).get("trainer") or {}


def apply_trainer_node_count(info: RuntimeInfo, job: Mapping[str, Any]) -> int:
    """Set the trainer pod set's count from ``spec.trainer.numNodes``; return the count."""
    trainer = info.trainer_pod_set()
    if trainer is None:
        return 0
    num_nodes = trainer_spec(job).get("numNodes")
    if num_nodes is not None:
        trainer.count = int(num_nodes)
    return trainer.count


def apply_trainer_env(info: RuntimeInfo, job: Mapping[str, Any]) -> dict[str, Any] | None:
    """Put ``spec.trainer.env`` on the trainer container; return the container (None if absent)."""
    container = info.trainer_container()
    if container is not None:
        podspecs.upsert_env(container, trainer_spec(job).get("env") or ())
    return container


def reserved_env_errors(
    job: Mapping[str, Any], reserved: Collection[str], owner: str
) -> list[FieldError]:
    """One error per ``spec.trainer.env`` entry whose name the ``owner`` runtime sets itself."""
    return [
        FieldError(
            f"spec.trainer.env[{index}].name",
            f"{var.get('name')} is reserved for the {owner} runtime",
        )
        for index, var in enumerate(trainer_spec(job).get("env") or ())
        if var.get("name") in reserved
    ]
