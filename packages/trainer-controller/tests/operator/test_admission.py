"""Admission decisions without a server."""

from __future__ import annotations

import base64
import json
from datetime import datetime, timezone
from typing import Any

import pytest
from trainer_controller.operator import admission
from trainer_runtime import builtin_runtimes

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)


def trainjob(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "job"},
        "spec": {"runtimeRef": {"name": "torch-distributed"}, **spec},
    }


def test_valid_trainjob_has_no_errors() -> None:
    assert admission.validation_errors(trainjob(trainer={"numNodes": 2})) == []


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        pytest.param({"trainer": {"numNodes": -1}}, "spec.trainer.numNodes", id="negative-nodes"),
        pytest.param(
            {"trainer": {"env": [{"name": "a"}, {"name": "a"}]}},
            "spec.trainer.env[1]",
            id="duplicate-env",
        ),
        pytest.param({"bogus": 1}, "spec.bogus", id="unknown-field"),
    ],
)
def test_invalid_trainjob_errors_carry_the_field_path(spec: dict[str, Any], field: str) -> None:
    assert field in [error.field for error in admission.validation_errors(trainjob(**spec))]


def test_denial_lists_every_cause() -> None:
    errors = admission.validation_errors(
        trainjob(trainer={"numNodes": -1, "env": [{"name": "a"}, {"name": "a"}]})
    )
    review = admission.denied("uid-1", "TrainJob", "job", errors)
    response = review["response"]
    assert (review["kind"], response["uid"], response["allowed"]) == (
        "AdmissionReview",
        "uid-1",
        False,
    )
    assert response["status"]["message"].startswith(
        'TrainJob.trainer.kubeflow.org "job" is invalid: '
    )
    assert {cause["field"] for cause in response["status"]["details"]["causes"]} == {
        "spec.trainer.numNodes",
        "spec.trainer.env[1]",
    }


def patches(*entries: dict[str, Any]) -> dict[str, Any]:
    return trainjob(runtimePatches=list(entries))


@pytest.mark.parametrize(
    ("new", "old", "expected"),
    [
        pytest.param(
            patches({"manager": "kueue"}), None, ["2026-01-02T03:04:05Z"], id="new-patch-stamped"
        ),
        pytest.param(
            patches({"manager": "kueue", "time": "2020-01-01T00:00:00Z"}),
            None,
            [],
            id="create-keeps-client-time",
        ),
        pytest.param(
            patches(
                {"manager": "kueue"}, {"manager": "acme.io/new", "time": "2020-01-01T00:00:00Z"}
            ),
            patches({"manager": "kueue", "time": "2025-01-01T00:00:00Z"}),
            ["2025-01-01T00:00:00Z"],
            id="update-new-patch-keeps-client-time",
        ),
        pytest.param(
            patches(
                {"manager": "kueue", "time": "2025-01-01T00:00:00Z", "trainingRuntimeSpec": {}}
            ),
            patches({"manager": "kueue", "time": "2025-01-01T00:00:00Z"}),
            ["2026-01-02T03:04:05Z"],
            id="changed-patch-restamped-despite-echoed-time",
        ),
        pytest.param(
            patches({"manager": "kueue"}),
            patches({"manager": "kueue", "time": "2025-01-01T00:00:00Z"}),
            ["2025-01-01T00:00:00Z"],
            id="unchanged-keeps-stored-time",
        ),
        pytest.param(
            patches({"manager": "kueue", "time": "2025-01-01T00:00:00Z"}),
            patches({"manager": "kueue", "time": "2025-01-01T00:00:00Z"}),
            [],
            id="nothing-to-do",
        ),
        pytest.param(
            patches({"manager": "kueue", "trainingRuntimeSpec": {}}),
            patches({"manager": "kueue", "time": "2025-01-01T00:00:00Z"}),
            ["2026-01-02T03:04:05Z"],
            id="changed-patch-restamped",
        ),
    ],
)
def test_runtime_patch_times(
    new: dict[str, Any], old: dict[str, Any] | None, expected: list[str]
) -> None:
    operations = admission.runtime_patch_times(new, old, NOW)
    assert [operation["value"] for operation in operations] == expected
    assert all(operation["path"] == "/spec/runtimePatches/0/time" for operation in operations)


def test_patched_response_encodes_a_json_patch() -> None:
    operations = [{"op": "add", "path": "/spec/runtimePatches/0/time", "value": "x"}]
    response = admission.patched("u", operations)["response"]
    assert response["patchType"] == "JSONPatch"
    assert json.loads(base64.b64decode(response["patch"])) == operations
    assert "patch" not in admission.patched("u", [])["response"]


def test_trainjob_is_checked_against_its_runtime_once_per_field() -> None:
    runtime = builtin_runtimes()["torch-distributed"].to_dict()
    errors = admission.validation_errors(
        trainjob(trainer={"env": [{"name": "PET_NNODES", "value": "1"}]}), runtime=runtime
    )
    assert [error.field for error in errors] == ["spec.trainer.env[0].name"]
    assert "PET_NNODES" in errors[0].message


def test_missing_env_injection_target_is_refused_at_runtime_ref() -> None:
    runtime = builtin_runtimes()["torch-distributed"].to_dict()
    runtime["spec"]["mlPolicy"]["torch"] = {
        "envInjection": {"targets": [{"jobName": "node", "containerNames": ["preflight"]}]}
    }
    errors = admission.validation_errors(trainjob(), runtime=runtime)
    assert [str(error) for error in errors] == [
        'spec.runtimeRef: envInjection target podSet "node" container "preflight" not found '
        "in runtime template"
    ]


def test_active_jobset_refuses_a_runtime_patch_change() -> None:
    def suspended(team: str) -> dict[str, Any]:
        return trainjob(
            suspend=True,
            runtimePatches=[
                {
                    "manager": "kueue.x-k8s.io/manager",
                    "trainingRuntimeSpec": {"template": {"metadata": {"labels": {"team": team}}}},
                }
            ],
        )

    jobset = {"status": {"replicatedJobsStatus": [{"name": "node", "active": 1}]}}
    errors = admission.validation_errors(suspended("b"), suspended("a"), jobset=jobset)
    assert [error.field for error in errors] == ["spec.runtimePatches"]
    assert "'node' is still active" in errors[0].message
    assert admission.validation_errors(suspended("b"), suspended("a")) == []


@pytest.mark.parametrize(
    ("labels", "warnings"),
    [
        pytest.param({"trainer.kubeflow.org/support": "deprecated"}, 1, id="deprecated"),
        pytest.param({"trainer.kubeflow.org/support": "stable"}, 0, id="other-support-value"),
        pytest.param(None, 0, id="no-labels"),
    ],
)
def test_deprecated_runtime_warns_in_allowed_and_denied_answers(
    labels: dict[str, str] | None, warnings: int
) -> None:
    runtime = builtin_runtimes()["torch-distributed"].to_dict()
    runtime["metadata"]["labels"] = labels
    found = admission.validation_warnings(runtime)
    assert len(found) == warnings
    assert admission.allowed("u", found)["response"].get("warnings", []) == found
    denial = admission.denied("u", "TrainJob", "job", [], found)["response"]
    assert denial.get("warnings", []) == found


@pytest.mark.parametrize(
    ("replicas", "fields"),
    [
        pytest.param(2, ["spec.template.spec.replicatedJobs[0].replicas"], id="trainer-replicas-2"),
        pytest.param(1, [], id="trainer-replicas-1"),
    ],
)
def test_runtime_webhook_refuses_a_trainer_job_with_more_than_one_replica(
    replicas: int, fields: list[str]
) -> None:
    runtime = builtin_runtimes()["torch-distributed"].to_dict()
    runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["replicas"] = replicas
    assert [error.field for error in admission.validation_errors(runtime)] == fields
