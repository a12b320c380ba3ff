"""``TrainerOverrides``: an option (``train(options=...)``, ``submit(options=...)``) that sets the
trainer's node count, processes per node, env and runtime on any TrainJob, whatever built it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from trainer_sdk.options import AnyTrainer

__all__ = ["TrainerOverrides"]


@dataclass(frozen=True)
class TrainerOverrides:
    """``.spec.trainer.numNodes`` / ``numProcPerNode``, ``env`` entries (replacing those of the
    same name) and ``.spec.runtimeRef`` (by name), each only when given."""

    num_nodes: int | None = None
    num_proc_per_node: int | None = None
    env: dict[str, str] = field(default_factory=dict)
    runtime: str | None = None

    def __post_init__(self) -> None:
        for option in ("num_nodes", "num_proc_per_node"):
            value = getattr(self, option)
            if value is not None and (type(value) is not int or value < 1):
                raise ValueError(
                    f"TrainerOverrides.{option}: expected an integer >= 1, got {value!r}"
                )

    def __call__(self, job_spec: dict[str, Any], trainer: AnyTrainer, backend: object) -> None:
        spec = job_spec.setdefault("spec", {})
        if self.runtime:
            spec["runtimeRef"] = {"name": self.runtime}
        if self.num_nodes is None and self.num_proc_per_node is None and not self.env:
            return
        trainer_spec = spec.setdefault("trainer", {})
        if self.num_nodes is not None:
            trainer_spec["numNodes"] = self.num_nodes
        if self.num_proc_per_node is not None:
            trainer_spec["numProcPerNode"] = self.num_proc_per_node
        if self.env:
            kept = [
                item for item in trainer_spec.get("env") or [] if item.get("name") not in self.env
            ]
            trainer_spec["env"] = kept + [{"name": k, "value": v} for k, v in self.env.items()]
