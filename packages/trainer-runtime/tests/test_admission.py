"""Admission checks beyond the specs: deprecated runtimes, runtimePatches while pods are active."""

from __future__ import annotations

from typing import Any

import pytest
from runtime_cases import make_job, runtime_doc
from trainer_runtime import builtin_runtimes, deprecation_warnings, runtime_patch_errors
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
    assert [str(error) for error in runtime_patch_errors(new, old, jobset)] == expected


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
