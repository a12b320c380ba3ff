"""A JobSet compiled into its local plan: every decision made there, none left for later."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from trainer_sdk import constants
from trainer_sdk.backends.local.jobdir import JobDir
from trainer_sdk.backends.local.plan import Dependency, LateValue, Slot
from trainer_sdk.backends.local.submit.compiler import compile_plan
from trainer_sdk.backends.local.submit.pods import UnsupportedPodError

from ..test_plan import planned
from .test_pods import jobset, replicated_job, with_volume


def two_node_job(**spec: Any) -> dict[str, Any]:
    """A JobSet of a dataset initializer and two nodes that wait for it and mount ``/ckpt``."""
    node = replicated_job(
        "node",
        ["python", "t.py", "--out=/ckpt/x", "--peer=job-node-0-0.job:29500"],
        parallelism=2,
        depends_on=constants.DATASET_INITIALIZER,
    )
    with_volume(node, {"name": "ckpt", "emptyDir": {}}, mountPath="/ckpt")
    return jobset(replicated_job(constants.DATASET_INITIALIZER, ["true"]), node, **spec)


def test_the_plan_keeps_the_isolation_decision_and_what_follows_from_it(tmp_path: Path) -> None:
    job_dir = JobDir(tmp_path, "job")
    plan = compile_plan(two_node_job(), (), job_dir, isolated=True, gpus=0)
    node = plan.jobs[1].pods[1]
    volume = str(job_dir.path / "volumes" / "ckpt")
    argument = "--peer=job-node-0-0.job:29500"
    assert plan.isolated is True
    assert node.command[2:] == ("--out=/ckpt/x", argument)
    assert node.slots == (
        Slot(LateValue.MASTER_PORT, len(argument) - 5, len(argument), argument=3),
    )
    assert node.mounts[0].local == volume and node.name == node.env["HOSTNAME"] == "job-node-0-1"


def test_without_namespaces_the_users_names_and_paths_are_refused_at_submit(
    tmp_path: Path,
) -> None:
    """The fallback rewrote them: ``--peer=127.0.0.1:29500``, ``--out=<job>/volumes/ckpt/x``."""
    with pytest.raises(UnsupportedPodError, match=r"command\[2\]: names the volume mount path"):
        compile_plan(two_node_job(), (), JobDir(tmp_path, "job"), isolated=False, gpus=0)


def test_the_jobsets_policies_are_compiled_once(tmp_path: Path) -> None:
    manifest = two_node_job(
        failurePolicy={"maxRestarts": 3},
        successPolicy={"operator": "Any", "targetReplicatedJobs": ["node"]},
        network={"subdomain": "peers"},
    )
    manifest["metadata"]["namespace"] = "team"
    plan = compile_plan(
        manifest, (), JobDir(tmp_path, "job"), isolated=True, gpus=0, active_deadline_seconds=9
    )
    assert [job.name for job in plan.jobs] == [constants.DATASET_INITIALIZER, "node"]
    assert plan.jobs[1].depends_on == (Dependency(constants.DATASET_INITIALIZER, "Complete"),)
    assert (plan.max_restarts, plan.success_operator, plan.success_targets) == (3, "Any", ("node",))
    assert (plan.subdomain, plan.namespace, plan.active_deadline_seconds) == ("peers", "team", 9)
    assert plan.grace_seconds == 5.0 and plan.mpi is None and plan.cache is None


def test_accelerators_this_machine_lacks_run_on_cpu_and_the_plan_says_why(tmp_path: Path) -> None:
    manifest = two_node_job()
    container = manifest["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"][
        "containers"
    ][0]
    container["resources"] = {"limits": {"nvidia.com/gpu": 2}}
    container["env"] = [{"name": constants.TORCH_ENV_NUM_PROC_PER_NODE, "value": "auto"}]
    job_dir = JobDir(tmp_path, "job")
    short = compile_plan(manifest, (), job_dir, isolated=True, gpus=1)
    enough = compile_plan(manifest, (), job_dir, isolated=True, gpus=2)
    [why] = short.accelerator_shortfall
    assert "node-0, node-1 request nvidia.com/gpu: 2 per pod" in why
    assert [(pod.device, pod.device_count) for pod in short.jobs[1].pods] == [("cpu", "2")] * 2
    assert short.jobs[1].pods[0].env[constants.TORCH_ENV_NUM_PROC_PER_NODE] == "2"
    assert enough.accelerator_shortfall == ()
    assert [pod.device for pod in enough.jobs[1].pods] == ["gpu", "gpu"]


def test_an_mpi_jobset_is_localized_with_its_files_and_addresses(tmp_path: Path) -> None:
    objects = planned("deepspeed-distributed", {"numNodes": 3, "command": ["mpirun", "t.py"]})
    job_dir = JobDir(tmp_path, "job")
    plan = compile_plan(objects.jobset, objects.others, job_dir, isolated=True, gpus=0)
    assert plan.mpi is not None and plan.mpi.rank_bin == str(job_dir.path / "mpi-bin")
    [hostfile] = [file for file in plan.mpi.files if file.path.endswith("/hostfile")]
    assert hostfile.text == "localhost slots=1\n127.0.0.2 slots=1\n127.0.0.3 slots=1\n"
    assert {pod.name: pod.address for pod in plan.pods()} == {
        "job-node-0-0": "127.0.0.2",
        "job-node-0-1": "127.0.0.3",
        "job-launcher-0-0": "127.0.0.1",
    }
    assert {slot.value for pod in plan.pods() for slot in pod.slots} == {
        LateValue.SSH_PORT,
        LateValue.MASTER_PORT,
        LateValue.JOB_PATH,
    }
