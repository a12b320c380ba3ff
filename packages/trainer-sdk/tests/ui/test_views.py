"""The UI's JSON: job rows (age, duration), metric series, runtimes; a fixed clock."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta, timezone

import pytest
import trainer_runtime
from trainer_sdk import Step, TrainerStatus, TrainJob
from trainer_sdk.errors import JobFailedError
from trainer_sdk.training.metrics import MetricPoint
from trainer_sdk.types import CheckpointStatus
from trainer_sdk.ui import views

from ..conftest import make_runtime

CREATED = datetime(2026, 1, 1, 12, 0, tzinfo=timezone.utc)
NOW = CREATED + timedelta(minutes=10)


def job(status: str, reported: TrainerStatus | None = None) -> TrainJob:
    return TrainJob(
        name="j",
        runtime=make_runtime(),
        steps=[Step(name="node-0", status="Running", pod_name="j-node-0-0")],
        num_nodes=2,
        creation_timestamp=CREATED,
        status=status,
        trainer_status=reported,
    )


@pytest.mark.parametrize(
    ("status", "finished", "reported", "duration"),
    [
        pytest.param("Running", None, None, 600.0, id="running-until-now"),
        pytest.param("Complete", "2026-01-01T12:02:00Z", None, 120.0, id="complete-at-condition"),
        pytest.param(
            "Failed",
            None,
            TrainerStatus(last_updated_time=CREATED + timedelta(seconds=30)),
            30.0,
            id="failed-at-last-report",
        ),
        pytest.param("Failed", None, None, None, id="failed-unknown-end"),
    ],
)
def test_job_summary_age_and_duration(
    status: str, finished: str | None, reported: TrainerStatus | None, duration: float | None
) -> None:
    row = views.job_summary(job(status, reported), finished, NOW)
    assert (row["age"], row["duration"]) == (600.0, duration)
    assert (row["name"], row["status"], row["nodes"]) == ("j", status, 2)


def test_job_summary_carries_progress_eta_and_metrics() -> None:
    reported = TrainerStatus(
        progress_percentage=40, estimated_remaining_seconds=90, metrics={"loss": "0.3"}
    )
    row = views.job_summary(job("Running", reported), None, NOW)
    assert (row["progress"], row["eta"], row["metrics"]) == (40, 90, {"loss": "0.3"})


def test_metric_series_splits_metrics_and_ranks_and_drops_non_finite_values() -> None:
    points = [
        MetricPoint(0, 1.0, 0, {"loss": 1.0, "lr": 0.1}),
        MetricPoint(0, 1.0, 1, {"loss": 1.5}),
        MetricPoint(1, 2.0, 0, {"loss": float("nan")}),
        MetricPoint(2, 3.0, 0, {"loss": 0.5}),
    ]
    assert views.metric_series(points) == {
        "count": 4,
        "metrics": {
            "loss": {
                "0": {"x": [0, 2], "y": [1.0, 0.5], "t": [1.0, 3.0]},
                "1": {"x": [0], "y": [1.5], "t": [1.0]},
            },
            "lr": {"0": {"x": [0], "y": [0.1], "t": [1.0]}},
        },
    }


def test_runtime_view_shows_what_the_runtime_builds() -> None:
    manifest = trainer_runtime.builtin_runtimes()["torch-distributed"].to_dict()
    view = views.runtime_view(manifest)
    assert (view["name"], view["framework"], view["mlPolicy"]) == (
        "torch-distributed",
        "torch",
        ["torch"],
    )
    assert [job["name"] for job in view["replicatedJobs"]] == ["node"]
    assert view["replicatedJobs"][0]["containers"][0]["name"] == "node"


def test_failure_view_names_the_rank_its_last_step_and_the_traceback() -> None:
    error = JobFailedError(
        "j",
        "FailedJobs: pod j-node-0-1 exited with code 1",
        "node-1",
        ["Traceback (most recent call last):", '    raise ValueError("bad")', "ValueError: bad"],
        exception="ValueError: bad",
        rank=1,
    )
    points = [MetricPoint(4, 1.0, 1, {"loss": 1.0}), MetricPoint(9, 2.0, 0, {"loss": 0.5})]
    assert views.failure_view(error, points) == {
        "exception": "ValueError: bad",
        "reason": "FailedJobs: pod j-node-0-1 exited with code 1",
        "rank": 1,
        "step": "node-1",
        "trainingStep": 4,  # rank 1's, not rank 0's later step
        "traceback": [
            "Traceback (most recent call last):",
            '    raise ValueError("bad")',
            "ValueError: bad",
        ],
    }


def test_failure_view_falls_back_to_the_jobs_step_when_only_rank_0_records() -> None:
    """log_metrics records rank 0 by default: a failing rank 1 has no points of its own."""
    error = JobFailedError("j", "FailedJobs", "node-1", [], exception="ValueError: bad", rank=1)
    points = [MetricPoint(2, 1.0, 0, {"loss": 1.0}), MetricPoint(3, 2.0, 0, {"loss": 0.5})]
    assert views.failure_view(error, points)["trainingStep"] == 3
    assert views.failure_view(error, [])["trainingStep"] is None


def test_job_detail_shows_the_latest_checkpoint_and_the_gems_switch() -> None:
    trained = dataclasses.replace(
        job("Running"),
        checkpoint=CheckpointStatus(
            step=12, saved_at=NOW - timedelta(seconds=8), attempt=1, resumed_from_step=6
        ),
        gems_kernels=True,
    )
    detail = views.job_detail(trained, {}, None, [], None, NOW)
    assert detail["checkpoint"] == {"step": 12, "age": 8.0, "attempt": 1, "resumedFrom": 6}
    assert detail["gemsKernels"] is True
    fresh = views.job_detail(job("Running"), {}, None, [], None, NOW)
    assert (fresh["checkpoint"], fresh["gemsKernels"]) == (None, False)
