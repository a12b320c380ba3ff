"""Volcano plugin: PodGroup with queue, priority class and topology; the group annotation."""

from __future__ import annotations

from runtime_cases import FIXED_SETTINGS, by_kind, make_job, render_of, runtime_doc


def test_volcano_pod_group_and_annotation() -> None:
    runtime = runtime_doc("deepspeed-distributed")
    runtime["spec"]["podGroupPolicy"] = {
        "volcano": {"networkTopology": {"mode": "soft", "highestTierAllowed": 2}}
    }
    launcher_pod = runtime["spec"]["template"]["spec"]["replicatedJobs"][1]["template"]["spec"][
        "template"
    ]["spec"]
    launcher_pod["priorityClassName"] = "high"
    job = make_job(
        runtime="deepspeed-distributed", numNodes=4, resourcesPerNode={"limits": {"cpu": "1"}}
    )
    job["metadata"]["annotations"] = {"scheduling.volcano.sh/queue-name": "research"}
    objects = render_of(job, runtime, settings=FIXED_SETTINGS)
    (pod_group,) = by_kind(objects, "PodGroup")
    assert pod_group["apiVersion"] == "scheduling.volcano.sh/v1beta1"
    assert pod_group["spec"] == {
        "minMember": 4,
        "minResources": {"cpu": "1"},
        "queue": "research",
        "priorityClassName": "high",
        "networkTopology": {"mode": "soft", "highestTierAllowed": 2},
    }
    jobset = by_kind(objects, "JobSet")[0]
    for replicated in jobset["spec"]["replicatedJobs"]:
        metadata = replicated["template"]["spec"]["template"]["metadata"]
        assert metadata["annotations"] == {"scheduling.k8s.io/group-name": "alpha"}
