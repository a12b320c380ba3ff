"""XGBoost: the DMLC rabit tracker env; one worker per GPU, or one per node on CPUs."""

from __future__ import annotations

from typing import Final

import trainer_api
from trainer_api import FieldError, TrainJob

from trainer_runtime import constants, podspecs, resources
from trainer_runtime.info import RuntimeInfo
from trainer_runtime.plugins._policies import (
    apply_trainer_env,
    apply_trainer_node_count,
    reserved_env_errors,
)

__all__ = ["RESERVED_ENV_NAMES", "XGBoost"]

DMLC_TRACKER_URI: Final = "DMLC_TRACKER_URI"
DMLC_TRACKER_PORT: Final = "DMLC_TRACKER_PORT"
DMLC_TASK_ID: Final = "DMLC_TASK_ID"
DMLC_NUM_WORKER: Final = "DMLC_NUM_WORKER"
RESERVED_ENV_NAMES: Final = (DMLC_TRACKER_URI, DMLC_TRACKER_PORT, DMLC_TASK_ID, DMLC_NUM_WORKER)


class XGBoost:
    """Applies ``mlPolicy.xgboost``."""

    name = "XGBoost"

    def validate(self, info: RuntimeInfo, job: TrainJob) -> list[FieldError]:
        """The trainer env must not set the DMLC variables."""
        if info.ml_policy.xgboost is None:
            return []
        return reserved_env_errors(job, RESERVED_ENV_NAMES, "XGBoost")

    def enforce_ml_policy(self, info: RuntimeInfo, job: TrainJob) -> None:
        """Node count, user env, then tracker address, port, task id and worker count."""
        if info.ml_policy.xgboost is None:
            return
        num_nodes = apply_trainer_node_count(info, job)
        container = apply_trainer_env(info, job)
        if container is None:
            return
        workers_per_node = max(1, resources.gpu_count(container.get("resources")))
        podspecs.upsert_env(
            container,
            [
                podspecs.value_env(
                    DMLC_TRACKER_URI, f"{info.job_name}-{trainer_api.NODE}-0-0.{info.subdomain}"
                ),
                podspecs.value_env(DMLC_TRACKER_PORT, str(constants.CONTAINER_TRAINER_PORT)),
                podspecs.field_ref_env(DMLC_TASK_ID, constants.JOB_COMPLETION_INDEX_FIELD_PATH),
                podspecs.value_env(DMLC_NUM_WORKER, str(num_nodes * workers_per_node)),
            ],
        )
        podspecs.upsert_port(container, constants.CONTAINER_TRAINER_PORT)
