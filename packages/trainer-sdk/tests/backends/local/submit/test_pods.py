"""A JobSet manifest expanded into local pods: order, names, env, host and port mapping."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from trainer_sdk.backends.local import volumes
from trainer_sdk.backends.local.plan import LateValue, Slot, bind
from trainer_sdk.backends.local.submit.pods import (
    PodPlan,
    UnsupportedPodError,
    expand_pods,
    ordered_replicated_jobs,
    success_targets,
    termination_grace,
)


def replicated_job(
    name: str,
    command: list[str],
    replicas: int = 1,
    parallelism: int | None = None,
    env: list[dict[str, Any]] | None = None,
    depends_on: str | None = None,
) -> dict[str, Any]:
    """A replicated job with one container."""
    job_spec: dict[str, Any] = {
        "template": {
            "spec": {
                "containers": [{"name": name, "image": "img", "command": command, "env": env or []}]
            }
        }
    }
    if parallelism is not None:
        job_spec["parallelism"] = parallelism
        job_spec["completions"] = parallelism
    job: dict[str, Any] = {"name": name, "replicas": replicas, "template": {"spec": job_spec}}
    if depends_on:
        job["dependsOn"] = [{"name": depends_on, "status": "Complete"}]
    return job


def jobset(*jobs: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "job"},
        "spec": {"replicatedJobs": list(jobs), **spec},
    }


def expand(manifest: dict[str, Any], *args: Any, port: int = 41000) -> PodPlan:
    """``expand_pods``, the pods bound as the runner binds them: the job's ``port``, attempt 0."""
    values = {LateValue.MASTER_PORT: str(port), LateValue.RESTART_ATTEMPT: "0"}
    return [
        (job, [bind(pod, values) for pod in pods]) for job, pods in expand_pods(manifest, *args)
    ]


TORCH_ENV = [
    {"name": "PET_NNODES", "value": "2"},
    {
        "name": "PET_NODE_RANK",
        "valueFrom": {
            "fieldRef": {
                "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"
            }
        },
    },
    {"name": "PET_MASTER_ADDR", "value": "job-node-0-0.job"},
    {"name": "PET_MASTER_PORT", "value": "29500"},
    {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
]


def test_dependencies_come_first_whatever_the_manifest_order() -> None:
    manifest = jobset(
        replicated_job("node", ["true"], depends_on="dataset-initializer"),
        replicated_job("dataset-initializer", ["true"]),
    )
    assert [job["name"] for job in ordered_replicated_jobs(manifest)] == [
        "dataset-initializer",
        "node",
    ]


def test_a_dependency_cycle_is_reported_with_its_field() -> None:
    manifest = jobset(
        replicated_job("a", ["true"], depends_on="b"), replicated_job("b", ["true"], depends_on="a")
    )
    with pytest.raises(UnsupportedPodError, match=r"dependsOn: cycle"):
        ordered_replicated_jobs(manifest)


def test_torch_nodes_get_completion_index_loopback_master_and_the_jobs_port() -> None:
    manifest = jobset(
        replicated_job(
            "node",
            ["torchrun", "--master-addr=job-node-0-0.job:29500", "t.py"],
            parallelism=2,
            env=TORCH_ENV,
        )
    )
    [(_, pods)] = expand(manifest)
    assert [(pod.name, pod.step) for pod in pods] == [
        ("job-node-0-0", "node-0"),
        ("job-node-0-1", "node-1"),
    ]
    assert [pod.env["PET_NODE_RANK"] for pod in pods] == ["0", "1"]
    assert {pod.env["PET_MASTER_ADDR"] for pod in pods} == {"127.0.0.1"}
    assert {pod.env["PET_MASTER_PORT"] for pod in pods} == {"41000"}
    assert pods[1].env["POD_NAME"] == "job-node-0-1"
    assert pods[0].command == ("torchrun", "--master-addr=127.0.0.1:41000", "t.py")


def test_replicas_become_job_indexes_and_launcher_is_node_zero() -> None:
    manifest = jobset(
        replicated_job("launcher", ["mpirun"]), replicated_job("node", ["sshd"], replicas=2)
    )
    steps = [pod.step for _, pods in expand(manifest) for pod in pods]
    assert steps == ["node-0", "node-1", "node-2"]


@pytest.mark.parametrize(
    ("job", "message"),
    [
        pytest.param(
            replicated_job("node", []),
            r"containers\[0\]\.command: the image's entrypoint",
            id="no-command",
        ),
        pytest.param(
            replicated_job("node", ["x"], env=[{"name": "A", "valueFrom": {"secretKeyRef": {}}}]),
            r"env\[0\]\.valueFrom: only fieldRef",
            id="secret-ref",
        ),
        pytest.param(
            replicated_job(
                "node",
                ["x"],
                env=[{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIPs"}}}],
            ),
            r"fieldPath 'status.hostIPs'",
            id="unknown-field",
        ),
    ],
)
def test_pods_that_cannot_run_locally_name_the_field(job: dict[str, Any], message: str) -> None:
    with pytest.raises(UnsupportedPodError, match=message):
        expand(jobset(job))


def test_success_policy_defaults_to_all_replicated_jobs() -> None:
    manifest = jobset(replicated_job("a", ["true"]), replicated_job("b", ["true"]))
    assert success_targets(manifest) == ("All", ["a", "b"])
    manifest["spec"]["successPolicy"] = {"operator": "Any", "targetReplicatedJobs": ["b"]}
    assert success_targets(manifest) == ("Any", ["b"])


def test_the_grace_period_is_the_longest_a_pod_template_asks_for() -> None:
    fast, slow = replicated_job("a", ["true"]), replicated_job("b", ["true"])
    assert termination_grace(jobset(fast, slow), 5.0) == 5.0  # none set: the local default
    pod_spec = slow["template"]["spec"]["template"]["spec"]
    pod_spec["terminationGracePeriodSeconds"] = 45
    fast["template"]["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 0
    assert termination_grace(jobset(fast, slow), 5.0) == 45.0
    pod_spec["terminationGracePeriodSeconds"] = True  # not a number of seconds: ignored
    assert termination_grace(jobset(fast, slow), 5.0) == 0.0


def test_volume_mounts_become_shared_local_directories() -> None:
    initializer = replicated_job("dataset-initializer", [])
    node = replicated_job(
        "node",
        ["python", "-c", "open('/workspace/dataset/x')"],
        env=[{"name": "DATA", "value": "/workspace/dataset"}],
        depends_on="dataset-initializer",
    )
    for job in (initializer, node):
        pod_spec = job["template"]["spec"]["template"]["spec"]
        pod_spec["volumes"] = [{"name": "initializer", "emptyDir": {}}]
        pod_spec["containers"][0]["volumeMounts"] = [
            {"name": "initializer", "mountPath": "/workspace"}
        ]
    [(_, [init_pod]), (_, [node_pod])] = expand(jobset(initializer, node), "/tmp/job/volumes")
    assert init_pod.command == (
        "python",
        "-m",
        "trainer_sdk.initializers",
        "dataset",
        "/tmp/job/volumes/initializer/dataset",
    )
    assert node_pod.command[-1] == "open('/tmp/job/volumes/initializer/dataset/x')"
    assert node_pod.env["DATA"] == "/tmp/job/volumes/initializer/dataset"
    assert node_pod.directories == init_pod.directories == ("/tmp/job/volumes/initializer",)


def test_expanding_a_large_jobset_is_linear_in_its_pods() -> None:
    """Host names were rewritten one pattern per host (1600 nodes: hours); now one pattern."""
    manifest = jobset(
        replicated_job(
            "node",
            ["torchrun", "--master-addr=job-node-0-0.job", "--master-port=29500", "train.py"],
            parallelism=1600,
            env=TORCH_ENV,
        )
    )
    started = time.monotonic()
    [(_, pods)] = expand(manifest)
    assert time.monotonic() - started < 30  # about 0.3 s here
    assert len(pods) == 1600
    assert pods[1599].command[1:3] == ("--master-addr=127.0.0.1", "--master-port=29500")


def test_a_29500_of_the_users_is_left_as_written() -> None:
    """Every 29500 in every argument and env value became the job's port: a job run with
    --max-steps 29500 trained for another number of steps."""
    env = [
        *TORCH_ENV,
        {"name": "STEPS", "value": "29500"},
        {"name": "MASTER_PORT", "value": "29500"},
    ]
    command = ["python", "t.py", "--max-steps", "29500", "--rdzv=job-node-0-0.job:29500", "x129500"]
    [(_, [pod])] = expand(jobset(replicated_job("node", command, env=env)))
    assert pod.command[2:] == ("--max-steps", "29500", "--rdzv=127.0.0.1:41000", "x129500")
    assert (pod.env["STEPS"], pod.env["MASTER_PORT"], pod.env["PET_MASTER_PORT"]) == (
        "29500",
        "41000",
        "41000",
    )


def test_the_compiled_pod_names_each_place_of_the_jobs_port_and_attempt() -> None:
    """Until the supervisor binds them, the pod holds the cluster's values; its slots say where
    the job's port goes (also through a ``$(PET_MASTER_PORT)`` reference) and the attempt."""
    attempt = {"fieldRef": {"fieldPath": "metadata.labels['jobset.sigs.k8s.io/restart-attempt']"}}
    env = [
        *TORCH_ENV,
        {"name": "RDZV", "value": "$(PET_MASTER_ADDR):$(PET_MASTER_PORT)"},
        {"name": "STEPS", "value": "29500"},
        {"name": "TRAINER_RESTART_ATTEMPT", "valueFrom": attempt},
        {"name": "MINE", "valueFrom": attempt},
        {"name": "LABELLED", "value": "attempt-$(MINE)"},
    ]
    command = ["python", "t.py", "--max-steps", "29500", "--rdzv=job-node-0-0.job:29500"]
    [(_, [pod])] = expand_pods(jobset(replicated_job("node", command, env=env)))
    assert pod.command[2:] == ("--max-steps", "29500", "--rdzv=127.0.0.1:29500")
    assert (pod.env["RDZV"], pod.env["TRAINER_RESTART_ATTEMPT"]) == ("127.0.0.1:29500", "0")
    assert set(pod.slots) == {
        Slot(LateValue.MASTER_PORT, 0, 5, env="PET_MASTER_PORT"),
        Slot(LateValue.MASTER_PORT, 10, 15, env="RDZV"),
        Slot(LateValue.MASTER_PORT, 17, 22, argument=4),
        Slot(LateValue.RESTART_ATTEMPT, 0, 1, env="TRAINER_RESTART_ATTEMPT"),
        Slot(LateValue.RESTART_ATTEMPT, 0, 1, env="MINE"),
        Slot(LateValue.RESTART_ATTEMPT, 8, 9, env="LABELLED"),
    }
    bound = bind(pod, {LateValue.MASTER_PORT: "41000", LateValue.RESTART_ATTEMPT: "3"})
    assert bound.command[2:] == ("--max-steps", "29500", "--rdzv=127.0.0.1:41000")
    assert (bound.env["RDZV"], bound.env["STEPS"], bound.env["TRAINER_RESTART_ATTEMPT"]) == (
        "127.0.0.1:41000",
        "29500",
        "3",
    )
    assert (bound.env["MINE"], bound.env["LABELLED"]) == ("3", "attempt-3")


def with_volume(job: dict[str, Any], volume: dict[str, Any], **mount: Any) -> dict[str, Any]:
    """``job`` with ``volume`` declared and mounted (``mount``: mountPath, subPath)."""
    pod_spec = job["template"]["spec"]["template"]["spec"]
    pod_spec.setdefault("volumes", []).append(volume)
    pod_spec["containers"][0].setdefault("volumeMounts", []).append(
        {"name": volume["name"], **mount}
    )
    return job


def test_a_claim_is_one_directory_per_namespace_and_claim_name_outside_the_job(
    tmp_path: Path,
) -> None:
    """It was a directory of the job named after the volume: another job never saw its data."""
    claim = {"name": "ckpt", "persistentVolumeClaim": {"claimName": "shared"}}
    job = with_volume(replicated_job("node", ["true"]), claim, mountPath="/ckpt")
    manifest = jobset(job)
    manifest["metadata"]["namespace"] = "team"
    [(_, [pod])] = expand(manifest, str(tmp_path / "job" / "volumes"), tmp_path)
    expected = str(volumes.claim_path("team", "shared", tmp_path))
    assert expected == str(tmp_path / ".volumes" / "team" / "shared")
    assert pod.directories == (expected,)


def test_empty_dir_is_the_jobs_and_host_path_is_the_hosts_own(tmp_path: Path) -> None:
    job = with_volume(
        replicated_job("node", ["true"]), {"name": "scratch", "emptyDir": {}}, mountPath="/scratch"
    )
    with_volume(
        job,
        {"name": "data", "hostPath": {"path": str(tmp_path / "host")}},
        mountPath="/data",
        subPath="x",
    )
    with_volume(
        job,
        {"name": "sock", "hostPath": {"path": "/run/x.sock", "type": "Socket"}},
        mountPath="/run/x.sock",
    )
    [(_, [pod])] = expand(jobset(job), "/j/volumes", tmp_path)
    # A subPath is made inside its volume as the pod starts (volumes.make_sub_paths).
    assert pod.directories == ("/j/volumes/scratch", str(tmp_path / "host"))
    assert [(m.path, m.source) for m in pod.mounts][1] == ("/data", str(tmp_path / "host" / "x"))


@pytest.mark.parametrize(
    ("volume", "sub_path", "message"),
    [
        ({"name": "v", "persistentVolumeClaim": {"claimName": "Bad_Name"}}, None, "claimName"),
        ({"name": "v", "emptyDir": {}}, "../escape", r"volumeMounts\[0\]\.subPath"),
        ({"name": "v", "emptyDir": {}}, "/abs", "subPath: expected a relative path"),
    ],
)
def test_volumes_the_cluster_refuses_name_the_field(
    volume: dict[str, Any], sub_path: str | None, message: str
) -> None:
    mount: dict[str, Any] = {"mountPath": "/v", **({"subPath": sub_path} if sub_path else {})}
    job = with_volume(replicated_job("node", ["true"]), volume, **mount)
    with pytest.raises(UnsupportedPodError, match=message):
        expand(jobset(job), "/j/volumes", Path("/r"))


def test_isolated_pods_keep_their_host_names_and_mount_paths(tmp_path: Path) -> None:
    """In private namespaces the names resolve and the paths exist: only the port after a pod
    host name is the job's."""
    env = [{"name": "MASTER_ADDR", "value": "job-node-0-0.job"}, {"name": "OUT", "value": "/ckpt"}]
    command = ["python", "t.py", "--rdzv=job-node-0-0.job:29500", "--out=/ckpt/model"]
    job = with_volume(
        replicated_job("node", command, env=env),
        {"name": "v", "emptyDir": {}},
        mountPath="/ckpt",
        readOnly=True,
    )
    [(_, [pod])] = expand(jobset(job), str(tmp_path / "volumes"), tmp_path, True)
    assert pod.command[2:] == ("--rdzv=job-node-0-0.job:41000", "--out=/ckpt/model")
    assert (pod.env["MASTER_ADDR"], pod.env["OUT"]) == ("job-node-0-0.job", "/ckpt")
    assert pod.mounts == (volumes.Mount("/ckpt", str(tmp_path / "volumes" / "v"), True, True),)
