"""The checkpoint status a job's metrics carry, as ``TrainJob.checkpoint`` shows it."""

from __future__ import annotations

from datetime import datetime, timezone

from trainer_runtime import builtin_runtimes
from trainer_sdk import types
from trainer_sdk.checkpoint import status as checkpoint_status
from trainer_sdk.status.jobs import to_train_job
from trainer_sdk.status.runtimes import runtime_from_manifest

RUNTIME = runtime_from_manifest(builtin_runtimes()["torch-distributed"].to_dict())


def manifest(metrics: list[dict[str, str]] | None) -> dict[str, object]:
    status = {"trainerStatus": {"metrics": metrics}} if metrics is not None else {}
    return {"metadata": {"name": "a"}, "spec": {}, "status": status}


def test_a_cluster_jobs_trainer_status_metrics_become_its_checkpoint_status() -> None:
    metrics = [
        {"name": "loss", "value": "0.5"},
        {"name": checkpoint_status.STEP_METRIC, "value": "400"},
        {"name": checkpoint_status.SAVED_AT_METRIC, "value": "1700000000.5"},
        {"name": checkpoint_status.ATTEMPT_METRIC, "value": "2"},
        {"name": checkpoint_status.RESUMED_FROM_METRIC, "value": "300"},
    ]
    job = to_train_job(manifest(metrics), RUNTIME, [])
    assert job.checkpoint == types.CheckpointStatus(
        step=400,
        saved_at=datetime(2023, 11, 14, 22, 13, 20, 500000, tzinfo=timezone.utc),
        attempt=2,
        resumed_from_step=300,
    )
    now = datetime(2023, 11, 14, 22, 14, 20, 500000, tzinfo=timezone.utc)
    assert job.checkpoint.age_seconds(now) == 60.0


def test_a_job_that_reported_no_checkpoint_has_none() -> None:
    assert to_train_job(manifest([{"name": "loss", "value": "1"}]), RUNTIME, []).checkpoint is None
    assert to_train_job(manifest(None), RUNTIME, []).checkpoint is None


def test_a_first_attempt_that_has_not_saved_yet() -> None:
    status = checkpoint_status.checkpoint_status({checkpoint_status.ATTEMPT_METRIC: 0.0})
    assert status == types.CheckpointStatus(step=None, saved_at=None, attempt=0)
    assert status.age_seconds() is None


def test_the_checkpoint_volume_option_sets_the_plugins_annotations() -> None:
    from trainer_runtime.plugins import checkpoint as plugin
    from trainer_sdk import CheckpointVolume

    spec: dict[str, object] = {"metadata": {"annotations": {"team": "a"}}}
    CheckpointVolume("shared", mount_path="/mnt/ckpt")(spec, None, None)
    assert spec["metadata"] == {
        "annotations": {
            "team": "a",
            plugin.VOLUME_ANNOTATION: "shared",
            plugin.MOUNT_PATH_ANNOTATION: "/mnt/ckpt",
        }
    }
