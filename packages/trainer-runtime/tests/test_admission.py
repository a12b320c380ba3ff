"""admit: the one set of TrainJob admission rules the webhook and the SDK both call, and the checks
beyond the specs (deprecated runtimes, runtimePatches while pods are active)."""

from __future__ import annotations

import copy
from collections import Counter
from typing import Any

import pytest
from runtime_cases import FIXED_SETTINGS, NOW, admitted, as_job, make_job, runtime_doc
from trainer_runtime import (
    Observed,
    build,
    builtin_runtimes,
    deprecation_warnings,
    runtime_patch_errors,
)
from trainer_runtime.admission import needs_jobset


def _deprecated(kind: str) -> dict[str, Any]:
    runtime = runtime_doc("torch-distributed")
    runtime["kind"] = kind
    runtime["metadata"]["labels"] = {"trainer.kubeflow.org/support": "deprecated"}
    return runtime


@pytest.mark.parametrize(
    ("runtime", "expected"),
    [
        pytest.param(
            _deprecated("ClusterTrainingRuntime"),
            [
                'Referenced ClusterTrainingRuntime "torch-distributed" is deprecated and will be '
                "removed in a future release of Kubeflow Trainer. See runtime deprecation "
                "policy: https://trainer.kubeflow.org/en/latest/operator-guides/runtime.html"
                "#runtime-deprecation-policy"
            ],
            id="deprecated-cluster-runtime",
        ),
        pytest.param(
            _deprecated("TrainingRuntime"),
            [
                'Referenced TrainingRuntime "torch-distributed" is deprecated and will be '
                "removed in a future release of Kubeflow Trainer. See runtime deprecation "
                "policy: https://trainer.kubeflow.org/en/latest/operator-guides/runtime.html"
                "#runtime-deprecation-policy"
            ],
            id="deprecated-namespaced-runtime",
        ),
        pytest.param(runtime_doc("torch-distributed"), [], id="supported-runtime"),
        pytest.param(builtin_runtimes()["torch-distributed"], [], id="typed-runtime"),
    ],
)
def test_deprecation_warnings(runtime: Any, expected: list[str]) -> None:
    assert deprecation_warnings(runtime) == expected


def _job(suspend: bool, team: str | None) -> dict[str, Any]:
    job = make_job()
    job["spec"]["suspend"] = suspend
    if team is not None:
        job["spec"]["runtimePatches"] = [
            {
                "manager": "kueue.x-k8s.io/manager",
                "trainingRuntimeSpec": {"template": {"metadata": {"labels": {"team": team}}}},
            }
        ]
    return job


def _jobset(*active: tuple[str, int]) -> dict[str, Any]:
    return {
        "status": {
            "replicatedJobsStatus": [{"name": name, "active": count} for name, count in active]
        }
    }


@pytest.mark.parametrize(
    ("new", "old", "jobset", "expected"),
    [
        pytest.param(
            _job(True, "b"),
            _job(False, "a"),
            _jobset(("dataset-initializer", 0), ("node", 2)),
            [
                "spec.runtimePatches: may not change while the JobSet's replicated job 'node' is "
                "still active (2 active)"
            ],
            id="suspending-update-while-pods-run",
        ),
        pytest.param(
            _job(True, "b"),
            _job(True, "a"),
            _jobset(("launcher", 1), ("node", 3)),
            [
                "spec.runtimePatches: may not change while the JobSet's replicated job "
                "'launcher' is still active (1 active)",
                "spec.runtimePatches: may not change while the JobSet's replicated job 'node' is "
                "still active (3 active)",
            ],
            id="every-active-job-named",
        ),
        pytest.param(
            _job(True, "b"), _job(True, "a"), _jobset(("node", 0)), [], id="pods-gone-allowed"
        ),
        pytest.param(_job(True, "b"), _job(True, "a"), None, [], id="no-jobset-allowed"),
        pytest.param(
            _job(True, "a"), _job(False, "a"), _jobset(("node", 2)), [], id="patches-unchanged"
        ),
        pytest.param(_job(True, "b"), None, _jobset(("node", 2)), [], id="create"),
    ],
)
def test_runtime_patch_errors(
    new: dict[str, Any],
    old: dict[str, Any] | None,
    jobset: dict[str, Any] | None,
    expected: list[str],
) -> None:
    old_job = as_job(old) if old is not None else None
    errors = runtime_patch_errors(as_job(new), old_job, jobset)
    assert [str(error) for error in errors] == expected


@pytest.mark.parametrize(
    ("new", "old", "expected"),
    [
        pytest.param(_job(True, "b"), _job(False, "a"), True, id="suspended-after"),
        pytest.param(_job(False, "b"), _job(True, "a"), True, id="suspended-before"),
        pytest.param(_job(False, "b"), _job(False, "a"), False, id="never-suspended"),
        pytest.param(_job(True, None), _job(True, None), False, id="no-patch-change"),
        pytest.param(_job(True, "b"), None, False, id="create"),
    ],
)
def test_needs_jobset(new: dict[str, Any], old: dict[str, Any] | None, expected: bool) -> None:
    assert needs_jobset(new, old) is expected


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
    assert [str(error) for error in admitted(job, runtime_doc(runtime)).errors] == expected


def test_models_and_manifests_give_the_same_errors() -> None:
    job = _with_model("torch-distributed")
    from_docs = admitted(job, runtime_doc("torch-distributed")).errors
    from_models = admitted(job, builtin_runtimes()["torch-distributed"]).errors
    assert from_docs == from_models != ()


def test_changed_runtime_patches_of_a_suspended_job_with_active_pods_are_refused() -> None:
    jobset = {"status": {"replicatedJobsStatus": [{"name": "node", "active": 2}]}}
    errors = admitted(
        _suspended_with_team("b"),
        runtime_doc("torch-distributed"),
        old=_suspended_with_team("a"),
        observed=Observed(jobset=jobset),
    ).errors
    assert [str(error) for error in errors] == [
        "spec.runtimePatches: may not change while the JobSet's replicated job 'node' is still "
        "active (2 active)"
    ]


def test_without_a_runtime_only_trainer_api_rules_apply() -> None:
    job = make_job(env=[{"name": "PET_NNODES", "value": "2"}])
    assert admitted(job, None).errors == ()


def test_build_consumes_the_admission_without_parsing_defaulting_or_validating_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import trainer_api
    from trainer_runtime import admission as admission_module

    calls: Counter[str] = Counter()

    def counted(name: str, function: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            calls[name] += 1
            return function(*args, **kwargs)

        return wrapper

    for name in ("parse", "apply_defaults", "validate"):
        monkeypatch.setattr(trainer_api, name, counted(name, getattr(trainer_api, name)))
    monkeypatch.setattr(
        admission_module, "runtime_info", counted("runtime_info", admission_module.runtime_info)
    )
    admission = admitted(make_job(numNodes=2), builtin_runtimes()["torch-distributed"])
    assert calls == {"parse": 1, "apply_defaults": 2, "validate": 1, "runtime_info": 1}
    admitted_spec = copy.deepcopy(admission.info.spec if admission.info else None)
    calls.clear()
    first = build(admission, Observed(), NOW, settings=FIXED_SETTINGS)
    again = build(admission, Observed(), NOW, settings=FIXED_SETTINGS)
    assert calls == {}
    assert first.apply == again.apply != ()
    assert admission.info is not None and admission.info.spec == admitted_spec
