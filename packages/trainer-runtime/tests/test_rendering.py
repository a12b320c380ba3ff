"""admission_errors: the one set of TrainJob admission rules the webhook and the SDK both call."""

from __future__ import annotations

from typing import Any

import pytest
from runtime_cases import make_job, runtime_doc
from trainer_runtime import admission_errors, builtin_runtimes


def _with_model(runtime: str) -> dict[str, Any]:
    job = make_job(runtime=runtime)
    job["spec"]["initializer"] = {"model": {"storageUri": "hf://org/model"}}
    return job


def _suspended_with_team(team: str) -> dict[str, Any]:
    job = make_job()
    job["spec"]["suspend"] = True
    job["spec"]["runtimePatches"] = [
        {
            "manager": "kueue.x-k8s.io/manager",
            "trainingRuntimeSpec": {"template": {"metadata": {"labels": {"team": team}}}},
        }
    ]
    return job


@pytest.mark.parametrize(
    ("job", "runtime", "expected"),
    [
        pytest.param(make_job(numNodes=2), "torch-distributed", [], id="valid"),
        pytest.param(
            _with_model("torch-distributed"),
            "torch-distributed",
            [
                "spec.runtimeRef: must have model-initializer job when trainJob is configured "
                "with input modelConfig",
                "spec.initializer.model: runtime 'torch-distributed': has no model-initializer "
                "replicated job",
            ],
            id="trainer-api-rule-then-plugin-rule-at-another-field",
        ),
        pytest.param(
            _with_model("torch-distributed-with-cache"),
            "torch-distributed-with-cache",
            [],
            id="webhook-validation-disabled-skips-job-against-runtime-rules",
        ),
        pytest.param(
            make_job(env=[{"name": "PET_NNODES", "value": "2"}]),
            "torch-distributed",
            [
                "spec.trainer.env[0].name: PET_NNODES is reserved: the torch runtime sets env "
                "names starting with PET_"
            ],
            id="one-message-per-field-trainer-api-first",
        ),
    ],
)
def test_admission_errors(job: dict[str, Any], runtime: str, expected: list[str]) -> None:
    assert [str(error) for error in admission_errors(job, runtime_doc(runtime))] == expected


def test_models_and_manifests_give_the_same_errors() -> None:
    job = _with_model("torch-distributed")
    from_docs = admission_errors(job, runtime_doc("torch-distributed"))
    from_models = admission_errors(job, builtin_runtimes()["torch-distributed"])
    assert from_docs == from_models != []


def test_changed_runtime_patches_of_a_suspended_job_with_active_pods_are_refused() -> None:
    jobset = {"status": {"replicatedJobsStatus": [{"name": "node", "active": 2}]}}
    errors = admission_errors(
        _suspended_with_team("b"),
        runtime_doc("torch-distributed"),
        old=_suspended_with_team("a"),
        jobset=jobset,
    )
    assert [str(error) for error in errors] == [
        "spec.runtimePatches: may not change while the JobSet's replicated job 'node' is still "
        "active (2 active)"
    ]


def test_without_a_runtime_only_trainer_api_rules_apply() -> None:
    job = make_job(env=[{"name": "PET_NNODES", "value": "2"}])
    assert admission_errors(job, None) == []
