"""The SDK's TrainJob view: status strings from conditions and pods, progress, failure message."""

from __future__ import annotations

from typing import Any

import pytest
from trainer_sdk import constants
from trainer_sdk.status.jobs import PodView, derive_status, to_train_job

from ..conftest import make_runtime


def pods(*phases: str) -> list[PodView]:
    return [
        PodView(f"job-node-0-{index}", f"node-{index}", phase) for index, phase in enumerate(phases)
    ]


def conditions(kind: str, reason: str = "R", message: str = "M") -> dict[str, Any]:
    return {"conditions": [{"type": kind, "status": "True", "reason": reason, "message": message}]}


@pytest.mark.parametrize(
    ("status", "phases", "expected"),
    [
        pytest.param({}, (), constants.TRAINJOB_CREATED, id="no-pods-yet"),
        pytest.param({}, ("Pending", "Running"), constants.TRAINJOB_CREATED, id="some-pending"),
        pytest.param(
            {}, ("Running", "Succeeded"), constants.TRAINJOB_RUNNING, id="all-running-or-done"
        ),
        pytest.param(
            conditions("Complete"), ("Succeeded",), constants.TRAINJOB_COMPLETE, id="complete"
        ),
        pytest.param(conditions("Failed"), ("Failed",), constants.TRAINJOB_FAILED, id="failed"),
        pytest.param(
            conditions("Failed", "Stopped"), ("Failed",), constants.TRAINJOB_STOPPED, id="stopped"
        ),
        pytest.param(
            {"conditions": [{"type": "Complete", "status": "False"}]},
            ("Running",),
            constants.TRAINJOB_RUNNING,
            id="false-condition-ignored",
        ),
    ],
)
def test_derive_status(status: dict[str, Any], phases: tuple[str, ...], expected: str) -> None:
    assert derive_status(status, pods(*phases)) == expected


def test_view_orders_steps_and_carries_progress_and_failure() -> None:
    manifest = {
        "metadata": {"name": "job", "creationTimestamp": "2026-01-02T03:04:05Z"},
        "spec": {"trainer": {"numNodes": 2}},
        "status": conditions("Failed", "FailedJobs", "pod job-node-0-1 exited with code 1"),
    }
    views = [
        PodView("b", "node-10", "Failed"),
        PodView("a", "node-2", "Running"),
        PodView("i", "dataset-initializer", "Succeeded"),
    ]
    progress = {
        "progressPercentage": 40,
        "estimatedRemainingSeconds": 9,
        "metrics": [{"name": "loss", "value": 0.5}],
    }
    job = to_train_job(manifest, make_runtime(), views, progress)
    assert [step.name for step in job.steps] == ["dataset-initializer", "node-2", "node-10"]
    assert job.status == constants.TRAINJOB_FAILED
    assert job.message == "FailedJobs: pod job-node-0-1 exited with code 1"
    assert job.num_nodes == 2
    assert job.creation_timestamp.year == 2026
    assert job.trainer_status is not None
    assert (job.trainer_status.progress_percentage, job.trainer_status.metrics) == (
        40,
        {"loss": "0.5"},
    )
