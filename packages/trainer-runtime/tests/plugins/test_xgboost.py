"""XGBoost plugin: DMLC tracker env; workers per node from GPUs."""

from __future__ import annotations

import pytest
from runtime_cases import (
    COMPLETION_INDEX,
    container_of,
    env_of,
    field_errors,
    make_job,
    rendered_jobset,
    runtime_doc,
)


@pytest.mark.parametrize(
    ("resources", "workers"),
    [
        pytest.param(None, "3", id="cpu-one-worker-per-node"),
        pytest.param({"limits": {"nvidia.com/gpu": "2"}}, "6", id="one-worker-per-gpu"),
    ],
)
def test_xgboost_env(resources: dict | None, workers: str) -> None:
    trainer = {"numNodes": 3, **({"resourcesPerNode": resources} if resources else {})}
    node = container_of(
        rendered_jobset(
            make_job(runtime="xgboost-distributed", **trainer), runtime_doc("xgboost-distributed")
        ),
        "node",
    )
    assert list(env_of(node).items()) == [
        ("DMLC_TRACKER_URI", "alpha-node-0-0.alpha"),
        ("DMLC_TRACKER_PORT", "29500"),
        ("DMLC_TASK_ID", COMPLETION_INDEX),
        ("DMLC_NUM_WORKER", workers),
    ]


def test_xgboost_reserved_env() -> None:
    job = make_job(runtime="xgboost-distributed", env=[{"name": "DMLC_NUM_WORKER", "value": "9"}])
    assert field_errors(job, runtime_doc("xgboost-distributed")) == [
        "spec.trainer.env[0].name: DMLC_NUM_WORKER is reserved for the XGBoost runtime"
    ]
