"""The local backend's planning: runtimes it cannot run are refused before anything starts."""

from __future__ import annotations

import copy
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from trainer_sdk.backends.local.backend import LocalBackend
from trainer_sdk.backends.local.submit import planning
from trainer_sdk.configs import LocalBackendConfig
from trainer_sdk.errors import InvalidTrainJobError

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


def flux_runtime() -> dict[str, Any]:
    """The built-in torch runtime with upstream's flux-distributed name and policy instead."""
    runtime = copy.deepcopy(planning.builtin_runtime_manifests()["torch-distributed"])
    runtime["metadata"]["name"] = "flux-distributed"
    runtime["spec"]["mlPolicy"] = {"numNodes": 1, "flux": {}}
    return runtime


def test_flux_job_is_refused_naming_the_policy_and_leaves_no_job(tmp_path: Path) -> None:
    backend = LocalBackend(LocalBackendConfig(root=tmp_path / "jobs"))
    job = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "lammps"},
        "spec": {
            "runtimeRef": {"name": "flux-distributed"},
            "trainer": {"numNodes": 2, "command": ["lmp", "-in", "in.reaxc.hns"]},
        },
    }
    with pytest.raises(InvalidTrainJobError) as raised:
        backend.submit(job, flux_runtime())
    assert [str(error) for error in raised.value.errors] == [
        "spec.runtimeRef.name: ClusterTrainingRuntime 'flux-distributed' uses mlPolicy.flux, "
        "which the local backend cannot run; submit the TrainJob to a Kubernetes cluster",
    ]
    assert raised.value.errors[0].field == "spec.runtimeRef.name"
    assert not (tmp_path / "jobs" / "lammps").exists()


def test_runtime_field_errors_reach_the_user_as_field_errors(tmp_path: Path) -> None:
    backend = LocalBackend(LocalBackendConfig(root=tmp_path / "jobs"))
    job = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "reserved"},
        "spec": {
            "runtimeRef": {"name": "torch-distributed"},
            "trainer": {
                "command": ["python", "-c", "pass"],
                "env": [{"name": "PET_NNODES", "value": "1"}],
            },
        },
    }
    with pytest.raises(InvalidTrainJobError) as raised:
        backend.submit(job)
    (error,) = raised.value.errors
    assert error.field == "spec.trainer.env[0].name"
    assert error.message.startswith("PET_NNODES is reserved")
    assert not (tmp_path / "jobs" / "reserved").exists()


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        pytest.param(
            {"trainer.kubeflow.org/support": "deprecated"},
            ['Warning: Referenced ClusterTrainingRuntime "torch-distributed" is deprecated'],
            id="deprecated-runtime-warns",
        ),
        pytest.param({}, [], id="supported-runtime-silent"),
    ],
)
def test_planning_logs_the_admission_warnings(
    labels: dict[str, str], expected: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    runtime = copy.deepcopy(planning.builtin_runtime_manifests()["torch-distributed"])
    runtime["metadata"]["labels"] = labels
    job = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "job", "namespace": "default"},
        "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"command": ["true"]}},
    }
    with caplog.at_level("WARNING", logger=planning.__name__):
        planning.plan_trainjob(job, runtime, NOW)
    assert len(caplog.records) == len(expected)
    for record, text in zip(caplog.records, expected, strict=True):
        assert record.getMessage().startswith(text)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        pytest.param("auto", "Input should be a valid integer (got 'auto')", id="auto-as-upstream"),
        pytest.param(0, "numProcPerNode must be greater than or equal to 1", id="zero"),
    ],
)
def test_num_proc_per_node_rule_is_trainer_apis(value: object, message: str) -> None:
    """The local backend refuses what the webhook refuses, with trainer_api's message."""
    job = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "job", "namespace": "default"},
        "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"numProcPerNode": value}},
    }
    runtime = planning.builtin_runtime_manifests()["torch-distributed"]
    with pytest.raises(InvalidTrainJobError) as raised:
        planning.plan_trainjob(job, runtime, NOW)
    assert {error.field for error in raised.value.errors} == {"spec.trainer.numProcPerNode"}
    assert any(message in error.message for error in raised.value.errors)


@pytest.mark.parametrize("runtime_name", ["torch-distributed", "deepspeed-distributed"])
def test_the_local_plan_is_the_operators_plan_of_the_api_defaulted_objects(
    runtime_name: str,
) -> None:
    """admit()'s defaulted job and runtime were discarded and build got the raw ones: the
    runtime snapshot and the JobSet lacked what the API server defaults (groupName, ...)."""
    import trainer_api
    import trainer_runtime

    runtime = planning.builtin_runtime_manifests()[runtime_name]
    job = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "j", "namespace": "default"},
        "spec": {"runtimeRef": {"name": runtime_name}, "trainer": {"numNodes": 2}},
    }
    admission = trainer_runtime.admit(trainer_api.parse(job), trainer_api.parse(runtime))
    operators = trainer_runtime.build(admission, trainer_runtime.Observed(), NOW)
    expected = planning.Planned([planning._to_doc(obj) for obj in operators.apply])
    planned = planning.plan_trainjob(job, runtime, NOW)
    assert planned.jobset == expected.jobset

    def config_maps(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [obj for obj in objects if obj["kind"] == "ConfigMap"]  # Secrets: fresh SSH keys

    assert config_maps(planned.others) == config_maps(expected.others)
    assert {job["groupName"] for job in planned.jobset["spec"]["replicatedJobs"]} == {"default"}
