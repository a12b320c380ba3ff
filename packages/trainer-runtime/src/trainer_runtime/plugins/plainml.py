"""PlainML: a runtime without a framework policy runs ``numNodes`` copies of the trainer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from trainer_runtime.info import RuntimeInfo
from trainer_runtime.plugins._policies import apply_trainer_env, apply_trainer_node_count

__all__ = ["FRAMEWORK_POLICIES", "PlainML"]

FRAMEWORK_POLICIES: Final = ("torch", "mpi", "jax", "xgboost", "flux")


class PlainML:
    """Node count and trainer env when the runtime names no framework policy."""

    name = "PlainML"

    def enforce_ml_policy(self, info: RuntimeInfo, job: Mapping[str, Any]) -> None:
        """Apply ``numNodes`` and the trainer env, unless a framework plugin owns the policy."""
        if any(info.ml_policy.get(policy) is not None for policy in FRAMEWORK_POLICIES):
            return
        apply_trainer_node_count(info, job)
        apply_trainer_env(info, job)
