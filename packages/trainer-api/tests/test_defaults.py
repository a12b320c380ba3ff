"""apply_defaults: the upstream defaults, only where the parent object is present."""

from __future__ import annotations

from typing import Any

import trainer_api
from trainer_api import apply_defaults, parse


def runtime(ml_policy: dict[str, Any], pod_group_policy: dict[str, Any] | None = None) -> Any:
    spec: dict[str, Any] = {
        "mlPolicy": ml_policy,
        "template": {
            "spec": {
                "replicatedJobs": [
                    {
                        "name": "node",
                        "template": {
                            "spec": {"template": {"spec": {"containers": [{"name": "node"}]}}}
                        },
                    }
                ]
            }
        },
    }
    if pod_group_policy is not None:
        spec["podGroupPolicy"] = pod_group_policy
    return parse(
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "ClusterTrainingRuntime",
            "metadata": {"name": "r"},
            "spec": spec,
        }
    )


def test_train_job_defaults_runtime_ref_suspend_and_managed_by() -> None:
    job = parse(
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": "j"},
            "spec": {"runtimeRef": {"name": "torch-distributed"}},
        }
    )
    spec = apply_defaults(job).to_dict()["spec"]
    assert spec == {
        "runtimeRef": {
            "name": "torch-distributed",
            "apiGroup": "trainer.kubeflow.org",
            "kind": "ClusterTrainingRuntime",
        },
        "suspend": False,
        "managedBy": "trainer.kubeflow.org/trainjob-controller",
    }


def test_defaults_do_not_change_the_input_or_override_set_values() -> None:
    job = parse(
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": "j"},
            "spec": {"runtimeRef": {"name": "r", "kind": "TrainingRuntime"}, "suspend": True},
        }
    )
    defaulted = apply_defaults(job)
    assert job.spec.managed_by is None
    assert defaulted.spec.suspend is True
    assert defaulted.spec.runtime_ref.kind == "TrainingRuntime"


def test_mpi_policy_defaults() -> None:
    mpi = apply_defaults(runtime({"mpi": {}})).to_dict()["spec"]["mlPolicy"]["mpi"]
    assert mpi == {
        "numProcPerNode": 1,
        "mpiImplementation": "OpenMPI",
        "sshAuthMountPath": "/root/.ssh",
        "runLauncherAsNode": False,
    }


def test_coscheduling_timeout_and_jobset_defaults() -> None:
    defaulted = apply_defaults(runtime({"torch": {}}, {"coscheduling": {}})).to_dict()["spec"]
    assert defaulted["podGroupPolicy"] == {"coscheduling": {"scheduleTimeoutSeconds": 60}}
    job = defaulted["template"]["spec"]["replicatedJobs"][0]
    assert (job["replicas"], job["groupName"]) == (1, "default")


def test_absent_parents_stay_absent() -> None:
    defaulted = apply_defaults(runtime({"torch": {}}))
    assert defaulted.spec.pod_group_policy is None
    assert defaulted.spec.ml_policy is not None and defaulted.spec.ml_policy.mpi is None


def test_lists_default_each_item() -> None:
    items = trainer_api.ClusterTrainingRuntimeList(items=[runtime({"flux": {}})])
    policy = apply_defaults(items).items[0].spec.ml_policy
    assert policy is not None and policy.flux is not None
    assert policy.flux.num_proc_per_node == 1
