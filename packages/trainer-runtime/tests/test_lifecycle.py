"""build(): lifecycle decisions, status and the objects to apply."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
import yaml
from runtime_cases import FIXED_SETTINGS, NOW, build_of, by_kind, make_job, render_of, runtime_doc
from trainer_api import Condition, TrainJobStatus
from trainer_runtime import PLUGINS, BuildError, InvalidTrainJobError, ObjectRef, Observed, Plan
from trainer_runtime.conditions import format_time

TORCH = "torch-distributed"


def _build(
    job: dict[str, Any], observed: Observed | None = None, runtime: Any = "default", now: Any = NOW
) -> Plan:
    runtime_value = (
        runtime_doc(job["spec"]["runtimeRef"]["name"]) if runtime == "default" else runtime
    )
    return build_of(job, runtime_value, observed or Observed(), now, settings=FIXED_SETTINGS)


def _status(plan: Plan) -> dict[str, Any]:
    assert plan.status is not None
    return plan.status.to_dict()


def _conditions(plan: Plan) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in _status(plan).get("conditions", [])}


def _jobset(
    suspend: bool = False, conditions: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "alpha", "namespace": "default"},
        "spec": {"suspend": suspend, "replicatedJobs": [{"name": "node"}]},
        "status": {
            "conditions": conditions or [],
            "replicatedJobsStatus": [{"name": "node", "active": 2, "ready": 2}],
        },
    }


def _snapshot(job: dict[str, Any], runtime: dict[str, Any]) -> dict[str, Any]:
    return by_kind(render_of(job, runtime, settings=FIXED_SETTINGS), "ConfigMap")[0]


def _condition(kind: str, status: str, reason: str, at: Any = NOW) -> dict[str, Any]:
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": "",
        "lastTransitionTime": format_time(at),
    }


def test_first_build_applies_snapshot_then_jobset() -> None:
    plan = _build(make_job(numNodes=2))
    assert [obj["kind"] for obj in plan.apply] == ["ConfigMap", "JobSet"]
    assert plan.apply[0]["metadata"]["name"] == "alpha-runtime-snapshot"
    assert plan.apply[0]["immutable"] is True
    assert _conditions(plan) == {"Created": ("True", "JobsCreationSucceeded")}
    assert plan.delete == ()
    assert plan.requeue_after is None


@pytest.mark.parametrize(
    ("managed_by", "acts"),
    [
        pytest.param(None, True, id="unset"),
        pytest.param("trainer.kubeflow.org/trainjob-controller", True, id="this-controller"),
        pytest.param("kueue.x-k8s.io/multikueue", False, id="multikueue"),
    ],
)
def test_managed_by(managed_by: str | None, acts: bool) -> None:
    job = make_job()
    if managed_by:
        job["spec"]["managedBy"] = managed_by
    plan = _build(job)
    assert (plan.apply != ()) == acts
    assert (plan.status is not None) == acts


@pytest.mark.parametrize(
    "ref",
    [
        pytest.param({"kind": "PyTorchJob", "name": "x"}, id="unknown-kind"),
        pytest.param(
            {"apiGroup": "example.com", "kind": "TrainingRuntime", "name": "x"}, id="unknown-group"
        ),
    ],
)
def test_unknown_runtime_kind_fails_the_job(ref: dict[str, str]) -> None:
    job = make_job()
    job["spec"]["runtimeRef"] = ref
    plan = _build(job, runtime=None)
    assert plan.apply == ()
    assert _conditions(plan) == {"Failed": ("True", "TrainingRuntimeNotSupported")}
    assert "is not supported" in _status(plan)["conditions"][0]["message"]


@pytest.mark.parametrize("kind", ["Complete", "Failed"])
def test_finished_job_is_never_rebuilt_even_without_jobset(kind: str) -> None:
    job = make_job()
    job["status"] = {"conditions": [_condition(kind, "True", "Done")]}
    assert _build(job) == Plan()


@pytest.mark.parametrize(
    ("jobset_condition", "expected"),
    [
        pytest.param(
            ("Completed", "AllJobsCompleted"), ("Complete", "AllJobsCompleted"), id="completed"
        ),
        pytest.param(("Failed", "FailedJobs"), ("Failed", "FailedJobs"), id="failed"),
    ],
)
def test_terminal_jobset_finishes_the_job(
    jobset_condition: tuple[str, str], expected: tuple[str, str]
) -> None:
    kind, reason = jobset_condition
    jobset = _jobset(conditions=[{**_condition(kind, "True", reason), "message": "jobset says so"}])
    plan = _build(make_job(), Observed(jobset=jobset))
    assert plan.apply == ()
    status = _status(plan)
    (condition,) = status["conditions"]
    assert (condition["type"], condition["reason"], condition["message"]) == (
        *expected,
        "jobset says so",
    )
    assert status["jobsStatus"] == [
        {"name": "node", "active": 2, "ready": 2, "succeeded": 0, "failed": 0, "suspended": 0}
    ]


def test_running_jobset_is_never_rewritten() -> None:
    job = make_job()
    first = _build(job)
    job["status"] = _status(first)
    plan = _build(job, Observed(jobset=_jobset(), objects=[first.apply[0]]))
    assert plan.apply == ()
    assert _status(plan)["jobsStatus"][0]["active"] == 2


def test_suspending_a_running_job_applies_a_suspended_jobset() -> None:
    job = make_job()
    job["spec"]["suspend"] = True
    plan = _build(job, Observed(jobset=_jobset()))
    (jobset,) = by_kind(list(plan.apply), "JobSet")
    assert jobset["spec"]["suspend"] is True
    assert _conditions(plan)["Suspended"] == ("True", "Suspended")


def test_resume_rebuilds_the_suspended_jobset_and_says_resumed() -> None:
    job = make_job()
    job["status"] = {
        "conditions": [_condition("Suspended", "True", "Suspended", NOW - timedelta(hours=1))]
    }
    plan = _build(job, Observed(jobset=_jobset(suspend=True)))
    (jobset,) = by_kind(list(plan.apply), "JobSet")
    assert jobset["spec"]["suspend"] is False
    resumed = next(c for c in _status(plan)["conditions"] if c["type"] == "Suspended")
    assert (resumed["status"], resumed["reason"], resumed["message"]) == (
        "False",
        "Resumed",
        "TrainJob is resumed",
    )
    assert resumed["lastTransitionTime"] == format_time(NOW)


def test_suspended_condition_time_kept_while_still_suspended() -> None:
    job = make_job()
    job["spec"]["suspend"] = True
    earlier = NOW - timedelta(minutes=5)
    job["status"] = {
        "conditions": [
            {
                **_condition("Suspended", "True", "Suspended", earlier),
                "message": "TrainJob is suspended",
            }
        ]
    }
    plan = _build(job, Observed(jobset=_jobset(suspend=True)))
    suspended = next(c for c in _status(plan)["conditions"] if c["type"] == "Suspended")
    assert suspended["lastTransitionTime"] == format_time(earlier)


def _deadline_job(seconds: int, created: Any) -> dict[str, Any]:
    job = make_job()
    job["spec"]["activeDeadlineSeconds"] = seconds
    job["metadata"]["creationTimestamp"] = format_time(created)
    return job


def test_deadline_not_reached_requeues_for_the_time_left() -> None:
    plan = _build(_deadline_job(60, NOW - timedelta(seconds=20)), Observed(jobset=_jobset()))
    assert plan.requeue_after == timedelta(seconds=40)
    assert plan.delete == ()


def test_deadline_exceeded_fails_and_deletes_the_jobset() -> None:
    plan = _build(_deadline_job(60, NOW - timedelta(seconds=61)), Observed(jobset=_jobset()))
    assert plan.delete == (ObjectRef("jobset.x-k8s.io/v1alpha2", "JobSet", "alpha", "default"),)
    assert plan.apply == ()
    assert _conditions(plan)["Failed"] == ("True", "DeadlineExceeded")
    assert plan.requeue_after is None


def test_deadline_clock_restarts_at_resume() -> None:
    job = _deadline_job(60, NOW - timedelta(hours=2))
    job["status"] = {
        "conditions": [_condition("Suspended", "False", "Resumed", NOW - timedelta(seconds=50))]
    }
    plan = _build(job, Observed(jobset=_jobset()))
    assert plan.requeue_after == timedelta(seconds=10)
    assert "Failed" not in _conditions(plan)


def test_deadline_clock_stops_while_suspended() -> None:
    job = _deadline_job(60, NOW - timedelta(hours=2))
    job["spec"]["suspend"] = True
    plan = _build(job, Observed(jobset=_jobset(suspend=True)))
    assert plan.requeue_after is None
    assert "Failed" not in _conditions(plan)


def _as_earlier_json_snapshot(snapshot: dict[str, Any]) -> dict[str, Any]:
    runtime = yaml.safe_load(snapshot["data"]["runtime"])
    return {**snapshot, "data": {"runtime.json": json.dumps(runtime)}}


@pytest.mark.parametrize(
    "convert",
    [
        pytest.param(lambda snapshot: snapshot, id="upstream-format"),
        pytest.param(_as_earlier_json_snapshot, id="earlier-json-format"),
    ],
)
def test_snapshot_pins_the_runtime_after_the_first_build(
    convert: Callable[[dict[str, Any]], dict[str, Any]],
) -> None:
    job = make_job()
    job["spec"]["suspend"] = True
    original = runtime_doc(TORCH)
    snapshot = convert(_snapshot(job, original))
    edited = runtime_doc(TORCH)
    edited["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"][
        "containers"
    ][0]["image"] = "edited"
    for runtime in (edited, None):
        plan = _build(
            job, Observed(jobset=_jobset(suspend=True), objects=[snapshot]), runtime=runtime
        )
        assert [obj["kind"] for obj in plan.apply] == ["JobSet"]
        image = plan.apply[0]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"][
            "containers"
        ][0]["image"]
        assert image == "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime"


def test_missing_runtime_without_snapshot_is_a_build_error_condition() -> None:
    plan = _build(make_job(), runtime=None)
    assert plan.apply == ()
    (condition,) = _status(plan)["conditions"]
    assert (condition["type"], condition["status"], condition["reason"]) == (
        "Created",
        "False",
        "JobsBuildFailed",
    )
    assert condition["message"].startswith("ClusterTrainingRuntime 'torch-distributed' not found")
    assert isinstance(plan.error, BuildError)
    assert not isinstance(plan.error, InvalidTrainJobError)


def test_validation_error_becomes_a_condition_with_field_paths() -> None:
    plan = _build(make_job(env=[{"name": "PET_NNODES", "value": "1"}]))
    assert plan.apply == ()
    (condition,) = _status(plan)["conditions"]
    assert condition["reason"] == "JobsBuildFailed"
    reserved = "PET_NNODES is reserved: the torch runtime sets env names starting with PET_"
    assert condition["message"] == f"spec.trainer.env[0].name: {reserved}"
    assert isinstance(plan.error, InvalidTrainJobError)
    assert [(error.field, error.message) for error in plan.error.errors] == [
        ("spec.trainer.env[0].name", reserved)
    ]


def test_a_built_plan_carries_no_error() -> None:
    assert _build(make_job()).error is None


def test_mpi_secret_created_once() -> None:
    job = make_job(runtime="deepspeed-distributed", numNodes=2)
    job["spec"]["suspend"] = True
    first = _build(job)
    assert [obj["kind"] for obj in first.apply] == ["ConfigMap", "Secret", "ConfigMap", "JobSet"]
    again = _build(
        job, Observed(jobset=_jobset(suspend=True), objects=[first.apply[0], first.apply[1]])
    )
    assert [obj["kind"] for obj in again.apply] == ["ConfigMap", "JobSet"]


def test_status_is_not_written_when_unchanged_and_trainer_status_kept() -> None:
    job = make_job()
    first = _build(job, Observed(jobset=_jobset()))
    job["status"] = {**_status(first), "trainerStatus": {"progressPercentage": 40}}
    plan = _build(job, Observed(jobset=_jobset()))
    assert plan.status is None
    assert plan.apply == ()


def test_build_accepts_typed_models() -> None:
    import trainer_api

    job = trainer_api.parse(make_job(numNodes=2))
    runtime = trainer_api.parse(runtime_doc(TORCH))
    plan = build_of(job, runtime, Observed(), NOW, settings=FIXED_SETTINGS)
    assert plan.apply == _build(make_job(numNodes=2)).apply


def test_typed_status_round_trip_writes_nothing_the_second_time() -> None:
    import trainer_api

    job = trainer_api.parse(make_job(numNodes=2))
    runtime = trainer_api.parse(runtime_doc(TORCH))
    jobset_doc = _jobset()
    jobset_doc["spec"]["replicatedJobs"] = by_kind(list(_build(make_job()).apply), "JobSet")[0][
        "spec"
    ]["replicatedJobs"]
    jobset_doc["status"]["replicatedJobsStatus"] = [
        {"name": "node", "active": 2, "ready": 2, "succeeded": 0, "failed": 0, "suspended": 0}
    ]
    jobset = trainer_api.parse(jobset_doc)
    first = build_of(job, runtime, Observed(jobset=jobset), NOW, settings=FIXED_SETTINGS)
    job.status = first.status
    later = NOW + timedelta(minutes=3)
    assert (
        build_of(job, runtime, Observed(jobset=jobset), later, settings=FIXED_SETTINGS).status
        is None
    )


def test_build_does_not_change_its_inputs() -> None:
    job, runtime = make_job(numNodes=2, env=[{"name": "A", "value": "1"}]), runtime_doc(TORCH)
    job["spec"]["suspend"] = True
    observed = Observed(jobset=_jobset(suspend=True))
    before = repr((job, runtime, observed))
    plan = _build(job, observed, runtime)
    plan.apply[-1]["spec"]["replicatedJobs"][0]["name"] = "changed"
    assert repr((job, runtime, observed)) == before


class _Preempted:
    """A driver's own status plugin: it observed a preemption the JobSet does not show."""

    name = "Preempted"

    def derive_status(self, job: Any, observed: Observed, now: Any) -> TrainJobStatus:
        condition = Condition(
            type="Suspended",
            status="True",
            reason="Preempted",
            message="the node went away",
            last_transition_time=NOW,
        )
        return TrainJobStatus(conditions=[condition])


def test_a_drivers_status_plugin_adds_its_typed_conditions_after_the_jobsets() -> None:
    observed = Observed(jobset=_jobset())
    plan = build_of(make_job(), runtime_doc(TORCH), observed, NOW, plugins=(*PLUGINS, _Preempted()))
    assert _conditions(plan)["Suspended"] == ("True", "Preempted")
    assert _status(plan)["jobsStatus"] == [
        {"name": "node", "active": 2, "ready": 2, "succeeded": 0, "failed": 0, "suspended": 0}
    ]
