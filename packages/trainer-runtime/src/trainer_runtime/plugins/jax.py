"""JAX: one process per node, coordinated by the first pod on port 29500."""

from __future__ import annotations

from typing import Final

import trainer_api
from trainer_api import FieldError, TrainJob

from trainer_runtime import constants, podspecs
from trainer_runtime.info import RuntimeInfo
from trainer_runtime.plugins._policies import (
    apply_trainer_env,
    apply_trainer_node_count,
    reserved_env_errors,
)

__all__ = ["JAX", "RESERVED_ENV_NAMES"]

JAX_NUM_PROCESSES: Final = "JAX_NUM_PROCESSES"
JAX_PROCESS_ID: Final = "JAX_PROCESS_ID"
JAX_COORDINATOR_ADDRESS: Final = "JAX_COORDINATOR_ADDRESS"
RESERVED_ENV_NAMES: Final = (JAX_NUM_PROCESSES, JAX_PROCESS_ID, JAX_COORDINATOR_ADDRESS)


class JAX:
    """Applies ``mlPolicy.jax``: process count, process id and coordinator address."""

    name = "JAX"

    def validate(self, info: RuntimeInfo, job: TrainJob) -> list[FieldError]:
        """The trainer env must not set the JAX variables."""
        if info.ml_policy.jax is None:
            return []
        return reserved_env_errors(job, RESERVED_ENV_NAMES, "JAX")

    def enforce_ml_policy(self, info: RuntimeInfo, job: TrainJob) -> None:
        """Node count, user env, then the JAX distributed env and port."""
        if info.ml_policy.jax is None:
            return
        num_nodes = apply_trainer_node_count(info, job)
        container = apply_trainer_env(info, job)
        if container is None:
            return
        first_pod = f"{info.job_name}-{trainer_api.NODE}-0-0.{info.subdomain}"
        coordinator = f"{first_pod}:{constants.CONTAINER_TRAINER_PORT}"
        podspecs.upsert_env(
            container,
            [
                podspecs.value_env(JAX_NUM_PROCESSES, str(num_nodes)),
                podspecs.field_ref_env(JAX_PROCESS_ID, constants.JOB_COMPLETION_INDEX_FIELD_PATH),
                podspecs.value_env(JAX_COORDINATOR_ADDRESS, coordinator),
            ],
        )
        podspecs.upsert_port(container, constants.CONTAINER_TRAINER_PORT)
