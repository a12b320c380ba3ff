"""The operator end to end on the stand-in; the tests play the JobSet controller."""

from __future__ import annotations

import base64
from typing import Any

import pytest

pytestmark = pytest.mark.e2e
CLUSTER_RUNTIMES = "/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes"


def trainjob(name: str, runtime: str = "torch-distributed", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name},
        "spec": {"runtimeRef": {"name": runtime}, **spec},
    }


def conditions(job: dict[str, Any] | None) -> dict[str, str]:
    return {
        item["type"]: item["status"]
        for item in ((job or {}).get("status") or {}).get("conditions") or []
    }


def test_trainjob_gets_jobset_and_snapshot_owned_by_it(cluster) -> None:  # type: ignore[no-untyped-def]
    cluster.replica()
    job = cluster.create(cluster.trainjobs, trainjob("train", trainer={"numNodes": 2}))
    jobset = cluster.wait_for(lambda: cluster.get(f"{cluster.jobsets}/train"), what="the JobSet")
    owner = jobset["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"], owner.get("controller")) == (
        "TrainJob",
        "train",
        job["metadata"]["uid"],
        True,
    )
    managers = {entry["manager"] for entry in jobset["metadata"]["managedFields"]}
    assert managers == {"trainer"}
    _, listed = cluster.server.request("GET", cluster.configmaps)
    owned = [
        item
        for item in listed["items"]
        if (item["metadata"].get("ownerReferences") or [{}])[0].get("uid") == job["metadata"]["uid"]
    ]
    assert owned, "the runtime snapshot ConfigMap"
    created = cluster.wait_for(
        lambda: conditions(cluster.get(f"{cluster.trainjobs}/train")).get("Created"),
        what="the Created condition",
    )
    assert created == "True"


def job_writes(cluster) -> dict[tuple[str, str, str], int]:  # type: ignore[no-untyped-def]
    """The API writes the stand-in counted on TrainJobs and the kinds they own."""
    writes = cluster.server.call(lambda: dict(cluster.server.store.writes))
    return {
        key: count
        for key, count in writes.items()
        if key[1] in ("trainjobs", "jobsets", "configmaps", "secrets")
    }


def owned_by(items: list[dict[str, Any]], uid: str) -> list[dict[str, Any]]:
    return [
        item
        for item in items
        if any(ref.get("uid") == uid for ref in item["metadata"].get("ownerReferences", []))
    ]


def test_mpi_trainjob_gets_secret_and_hostfile(cluster) -> None:  # type: ignore[no-untyped-def]
    cluster.replica()
    job = cluster.create(
        cluster.trainjobs, trainjob("mpi", runtime="deepspeed-distributed", trainer={"numNodes": 2})
    )
    cluster.wait_for(lambda: cluster.get(f"{cluster.jobsets}/mpi"), what="the JobSet")
    uid = job["metadata"]["uid"]
    secrets = owned_by(cluster.server.request("GET", cluster.secrets)[1]["items"], uid)
    configmaps = owned_by(cluster.server.request("GET", cluster.configmaps)[1]["items"], uid)
    assert len(secrets) == 1 and secrets[0]["data"], "the MPI SSH Secret"
    hostfiles = [
        item for item in configmaps if any("hostfile" in key for key in item.get("data", {}))
    ]
    assert hostfiles, [item["metadata"]["name"] for item in configmaps]


def test_flux_trainjob_gets_scripts_and_one_curve_secret(cluster) -> None:  # type: ignore[no-untyped-def]
    runtime = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": "flux-distributed"},
        "spec": {
            "mlPolicy": {"numNodes": 1, "flux": {}},
            "template": {"spec": {"replicatedJobs": [flux_node_job()]}},
        },
    }
    assert cluster.server.request("POST", CLUSTER_RUNTIMES, runtime)[0] == 201
    cluster.replica()
    job = cluster.create(
        cluster.trainjobs,
        trainjob(
            "lammps",
            runtime="flux-distributed",
            suspend=True,
            trainer={"numNodes": 2, "command": ["lmp", "-in", "in.reaxc.hns"]},
        ),
    )
    cluster.wait_for(lambda: cluster.get(f"{cluster.jobsets}/lammps"), what="the JobSet")
    uid = job["metadata"]["uid"]
    (secret,) = owned_by(cluster.server.request("GET", cluster.secrets)[1]["items"], uid)
    assert secret["metadata"]["name"] == "lammps-flux-curve"
    assert b"secret-key" in base64.b64decode(secret["data"]["curve.cert"])
    configmaps = owned_by(cluster.server.request("GET", cluster.configmaps)[1]["items"], uid)
    scripts = [item for item in configmaps if item["metadata"]["name"] == "lammps-flux-entrypoint"]
    assert sorted(scripts[0]["data"]) == ["entrypoint.sh", "init.sh"]
    cluster.patch(f"{cluster.trainjobs}/lammps", {"spec": {"suspend": False}})
    jobset = cluster.wait_for(
        lambda: (
            found
            if (found := cluster.get(f"{cluster.jobsets}/lammps"))
            and found["spec"]["suspend"] is False
            else None
        ),
        what="the JobSet resumed",
    )
    pod = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert [init["name"] for init in pod["initContainers"]] == ["flux-installer"]
    assert cluster.get(f"{cluster.secrets}/lammps-flux-curve") == secret


def flux_node_job() -> dict[str, Any]:
    return {
        "name": "node",
        "template": {
            "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
            "spec": {"template": {"spec": {"containers": [{"name": "node", "image": "ubuntu"}]}}},
        },
    }


@pytest.mark.parametrize(
    ("jobset_condition", "trainjob_condition"),
    [
        pytest.param("Completed", "Complete", id="completed"),
        pytest.param("Failed", "Failed", id="failed"),
    ],
)
def test_jobset_outcome_becomes_trainjob_condition(
    cluster,
    jobset_condition: str,  # type: ignore[no-untyped-def]
    trainjob_condition: str,
) -> None:
    cluster.replica()
    cluster.create(cluster.trainjobs, trainjob("job"))
    cluster.wait_for(lambda: cluster.get(f"{cluster.jobsets}/job"), what="the JobSet")
    cluster.patch(
        f"{cluster.jobsets}/job/status",
        {
            "status": {
                "conditions": [
                    {
                        "type": jobset_condition,
                        "status": "True",
                        "reason": "Test",
                        "message": "by the test",
                        "lastTransitionTime": "2026-01-01T00:00:00Z",
                    }
                ]
            }
        },
    )
    state = cluster.wait_for(
        lambda: conditions(cluster.get(f"{cluster.trainjobs}/job")).get(trainjob_condition),
        what=trainjob_condition,
    )
    assert state == "True"


def test_suspend_and_resume(cluster) -> None:  # type: ignore[no-untyped-def]
    cluster.replica()
    cluster.create(cluster.trainjobs, trainjob("job", suspend=True))
    jobset = cluster.wait_for(lambda: cluster.get(f"{cluster.jobsets}/job"), what="the JobSet")
    assert jobset["spec"]["suspend"] is True
    cluster.wait_for(
        lambda: conditions(cluster.get(f"{cluster.trainjobs}/job")).get("Suspended") == "True",
        what="Suspended",
    )
    cluster.patch(f"{cluster.trainjobs}/job", {"spec": {"suspend": False}})
    cluster.wait_for(
        lambda: (
            (cluster.get(f"{cluster.jobsets}/job") or {}).get("spec", {}).get("suspend") is False
        ),
        what="the JobSet resumed",
    )
    cluster.wait_for(
        lambda: conditions(cluster.get(f"{cluster.trainjobs}/job")).get("Suspended") == "False",
        what="Suspended=False",
    )


def test_deadline_deletes_the_jobset_and_fails_the_job(cluster) -> None:  # type: ignore[no-untyped-def]
    cluster.replica()
    cluster.create(cluster.trainjobs, trainjob("job", activeDeadlineSeconds=2))
    cluster.wait_for(
        lambda: conditions(cluster.get(f"{cluster.trainjobs}/job")).get("Failed") == "True",
        what="Failed after the deadline",
    )
    assert cluster.get(f"{cluster.jobsets}/job") is None
    writes = job_writes(cluster)
    assert (writes[("apply", "jobsets", "")], writes[("delete", "jobsets", "")]) == (1, 1)


def test_external_managed_by_is_left_alone(cluster) -> None:  # type: ignore[no-untyped-def]
    cluster.replica(concurrency=1)  # one worker: keys are reconciled in the order they were queued
    cluster.create(cluster.trainjobs, trainjob("external", managedBy="kueue.x-k8s.io/multikueue"))
    cluster.create(cluster.trainjobs, trainjob("ours"))
    cluster.wait_for(
        lambda: cluster.get(f"{cluster.jobsets}/ours"), what="the JobSet of the job queued second"
    )
    assert cluster.get(f"{cluster.jobsets}/external") is None
    assert "status" not in cluster.get(f"{cluster.trainjobs}/external")


def test_forced_watch_reconnect_repeats_no_work(cluster) -> None:  # type: ignore[no-untyped-def]
    cluster.replica(concurrency=1)
    cluster.create(cluster.trainjobs, trainjob("first"))
    cluster.wait_for(
        lambda: conditions(cluster.get(f"{cluster.trainjobs}/first")).get("Created"), what="first"
    )
    for_one = job_writes(cluster)
    cluster.server.drop_watches()
    cluster.create(cluster.trainjobs, trainjob("second"))
    cluster.wait_for(
        lambda: conditions(cluster.get(f"{cluster.trainjobs}/second")).get("Created"), what="second"
    )
    assert job_writes(cluster) == {key: 2 * count for key, count in for_one.items()}


def test_writes_per_trainjob_are_owned_objects_plus_one_status(cluster) -> None:  # type: ignore[no-untyped-def]
    cluster.replica()
    job = cluster.create(cluster.trainjobs, trainjob("job"))
    cluster.wait_for(
        lambda: conditions(cluster.get(f"{cluster.trainjobs}/job")).get("Created"), what="Created"
    )
    uid = job["metadata"]["uid"]
    owned = sum(
        len(owned_by(cluster.server.request("GET", path)[1]["items"], uid))
        for path in (cluster.jobsets, cluster.configmaps, cluster.secrets)
    )
    writes = job_writes(cluster)
    assert writes.pop(("create", "trainjobs", "")) == 1
    assert writes == {
        ("apply", "jobsets", ""): 1,
        ("apply", "configmaps", ""): owned - 1,
        ("patch", "trainjobs", "status"): 1,
    }


def test_trainjob_waiting_for_its_runtime_builds_once_it_exists(cluster) -> None:  # type: ignore[no-untyped-def]
    cluster.replica()
    cluster.create(cluster.trainjobs, trainjob("job", runtime="late"))
    cluster.wait_for(
        lambda: conditions(cluster.get(f"{cluster.trainjobs}/job")).get("Created") == "False",
        what="Created=False while the runtime is missing",
    )
    runtime = cluster.get(
        "/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes/torch-distributed"
    )
    runtime["metadata"] = {"name": "late"}
    cluster.create("/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes", runtime)
    cluster.wait_for(
        lambda: cluster.get(f"{cluster.jobsets}/job"), what="the JobSet once the runtime exists"
    )


def test_a_jobset_deleted_behind_the_operators_back_is_created_again(cluster) -> None:  # type: ignore[no-untyped-def]
    cluster.replica()
    cluster.create(cluster.trainjobs, trainjob("job"))
    first = cluster.wait_for(lambda: cluster.get(f"{cluster.jobsets}/job"), what="the JobSet")
    status, _ = cluster.server.request("DELETE", f"{cluster.jobsets}/job")
    assert status == 200
    again = cluster.wait_for(
        lambda: (
            jobset
            if (jobset := cluster.get(f"{cluster.jobsets}/job"))
            and jobset["metadata"]["uid"] != first["metadata"]["uid"]
            else None
        ),
        what="a new JobSet",
    )
    assert again["spec"] == first["spec"]
