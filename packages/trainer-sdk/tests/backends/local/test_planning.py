"""The local backend's planning: runtimes it cannot run are refused before anything starts."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from trainer_sdk.backends.local import planning
from trainer_sdk.backends.local.backend import LocalBackend
from trainer_sdk.configs import LocalBackendConfig
from trainer_sdk.errors import InvalidTrainJobError


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
