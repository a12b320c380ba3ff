"""JobSet plugin: naming, ownership, suspend, replicas, counts, scheduler metadata, status."""

from __future__ import annotations

from runtime_cases import NOW, as_job, make_job, rendered_jobset, runtime_doc
from trainer_runtime import Observed
from trainer_runtime.plugins.jobset import JobSet, jobs_status


def test_jobset_is_named_and_owned_like_the_trainjob() -> None:
    jobset = rendered_jobset(make_job(), runtime_doc("torch-distributed"))
    assert jobset["apiVersion"] == "jobset.x-k8s.io/v1alpha2"
    assert jobset["metadata"]["name"] == "alpha"
    assert jobset["metadata"]["namespace"] == "default"
    assert jobset["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "name": "alpha",
            "uid": "uid-alpha",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


def test_suspend_is_mirrored() -> None:
    job = make_job()
    assert rendered_jobset(job, runtime_doc("torch-distributed"))["spec"]["suspend"] is False
    job["spec"]["suspend"] = True
    assert rendered_jobset(job, runtime_doc("torch-distributed"))["spec"]["suspend"] is True


def test_ancestor_jobs_get_one_replica_and_counts() -> None:
    job = make_job(runtime="torchtune-llama3.2-1b", numNodes=1)
    jobset = rendered_jobset(job, runtime_doc("torchtune-llama3.2-1b"))
    shape = {
        j["name"]: (
            j["replicas"],
            j["template"]["spec"]["parallelism"],
            j["template"]["spec"]["completions"],
        )
        for j in jobset["spec"]["replicatedJobs"]
    }
    assert shape == {
        "dataset-initializer": (1, 1, 1),
        "model-initializer": (1, 1, 1),
        "node": (1, 1, 1),
    }
    assert (
        jobset["spec"]["volumeClaimPolicies"][0]["templates"][0]["metadata"]["name"]
        == "initializer"
    )


def test_jobs_status_from_replicated_job_status_in_jobset_order() -> None:
    jobset = {
        "spec": {"replicatedJobs": [{"name": "init"}, {"name": "node"}]},
        "status": {
            "replicatedJobsStatus": [
                {"name": "node", "active": 1, "ready": 1},
                {"name": "init", "succeeded": 1},
            ]
        },
    }
    assert jobs_status(jobset) == [
        {"name": "init", "active": 0, "ready": 0, "succeeded": 1, "failed": 0, "suspended": 0},
        {"name": "node", "active": 1, "ready": 1, "succeeded": 0, "failed": 0, "suspended": 0},
    ]


def test_failed_jobset_fails_the_trainjob_with_its_reason_and_message() -> None:
    jobset = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "alpha"},
        "spec": {"replicatedJobs": [{"name": "node"}]},
        "status": {
            "conditions": [
                {
                    "type": "Failed",
                    "status": "True",
                    "reason": "FailedJobs",
                    "message": "jobset failed due to one or more job failures",
                    "lastTransitionTime": "2026-01-01T11:00:00Z",
                }
            ]
        },
    }
    derived = JobSet().derive_status(as_job(make_job()), Observed(jobset=jobset), NOW)
    assert derived is not None
    assert derived.to_dict()["conditions"] == [
        {
            "type": "Failed",
            "status": "True",
            "reason": "FailedJobs",
            "message": "jobset failed due to one or more job failures",
            "lastTransitionTime": "2026-01-01T11:00:00Z",
        }
    ]
