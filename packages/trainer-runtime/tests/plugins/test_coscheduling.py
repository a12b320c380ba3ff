"""Coscheduling plugin: PodGroup numbers and the pod label."""

from __future__ import annotations

from runtime_cases import FIXED_SETTINGS, by_kind, make_job, render_of, runtime_doc


def _runtime_with(policy: dict) -> dict:
    runtime = runtime_doc("torchtune-llama3.2-1b")
    runtime["spec"]["podGroupPolicy"] = policy
    return runtime


def test_pod_group_counts_initializers_and_sums_requests() -> None:
    job = make_job(
        runtime="torchtune-llama3.2-1b",
        numNodes=100,
        resourcesPerNode={"requests": {"cpu": "2", "memory": "4Gi"}},
    )
    objects = render_of(
        job,
        _runtime_with({"coscheduling": {"scheduleTimeoutSeconds": 120}}),
        settings=FIXED_SETTINGS,
    )
    (pod_group,) = by_kind(objects, "PodGroup")
    assert pod_group["apiVersion"] == "scheduling.x-k8s.io/v1alpha1"
    assert pod_group["metadata"]["name"] == "alpha"
    assert pod_group["spec"] == {
        "minMember": 102,
        "minResources": {"cpu": "200", "memory": "400Gi", "nvidia.com/gpu": "200"},
        "scheduleTimeoutSeconds": 120,
    }


def test_pods_are_labelled_with_the_pod_group() -> None:
    objects = render_of(
        make_job(runtime="torchtune-llama3.2-1b"),
        _runtime_with({"coscheduling": {}}),
        settings=FIXED_SETTINGS,
    )
    jobset = by_kind(objects, "JobSet")[0]
    for job in jobset["spec"]["replicatedJobs"]:
        assert job["template"]["spec"]["template"]["metadata"]["labels"] == {
            "scheduling.x-k8s.io/pod-group": "alpha"
        }
    assert by_kind(objects, "PodGroup")[0]["spec"]["scheduleTimeoutSeconds"] == 60
