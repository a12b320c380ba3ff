"""PlainML: a runtime without a framework policy runs ``numNodes`` copies of the trainer."""

from __future__ import annotations

from typing import Final

from trainer_api import TrainJob

from trainer_runtime.info import RuntimeInfo
from trainer_runtime.plugins._policies import apply_trainer_env, apply_trainer_node_count

__all__ = ["FRAMEWORK_POLICIES", "PlainML"]

FRAMEWORK_POLICIES: Final = ("torch", "mpi", "jax", "xgboost", "flux")


class PlainML:
    """Node count and trainer env when the runtime names no framework policy."""

    name = "PlainML"

    def enforce_ml_policy(self, info: RuntimeInfo, job: TrainJob) -> None:
        """Apply ``numNodes`` and the trainer env, unless a framework plugin owns the policy."""
        ml = info.ml_policy
        if any(p is not None for p in (ml.torch, ml.mpi, ml.jax, ml.xgboost, ml.flux)):
            return
        apply_trainer_node_count(info, job)
        apply_trainer_env(info, job)
