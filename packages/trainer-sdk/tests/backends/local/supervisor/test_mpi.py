"""MPI JobSets made to run here: addresses, hostfile, worker and launcher commands, volumes."""

from __future__ import annotations

import base64
import os
import re
import shutil
import stat
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from trainer_sdk import CustomTrainer, constants
from trainer_sdk.backends.local.jobdir import JobDir
from trainer_sdk.backends.local.plan import LateValue, bind
from trainer_sdk.backends.local.submit import planning
from trainer_sdk.backends.local.submit.pods import PodPlan, UnsupportedPodError, expand_pods
from trainer_sdk.backends.local.supervisor import mpi
from trainer_sdk.manifests import admission
from trainer_sdk.manifests.trainjobs import build_trainjob_manifest
from trainer_sdk.status.runtimes import runtime_from_manifest

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


def train() -> None:
    """The training function the planned jobs run."""
    print("hello from", "/home/mpiuser")


def planned(runtime_name: str, num_nodes: int) -> planning.Planned:
    """The PodPlan of a CustomTrainer job ``job`` on a built-in runtime."""
    runtime = planning.builtin_runtime_manifests()[runtime_name]
    manifest = build_trainjob_manifest(
        "job",
        runtime_from_manifest(runtime),
        CustomTrainer(func=train, num_nodes=num_nodes, env={"LR": "0.1"}),
    )
    manifest["metadata"]["namespace"] = "default"
    return planning.plan_trainjob(
        admission.parse_trainjob(manifest), admission.parse_runtime(runtime), NOW
    )


VALUES = {
    LateValue.MASTER_PORT: "4567",
    LateValue.SSH_PORT: "2345",
    LateValue.JOB_PATH: "/shims:/usr/bin",
    LateValue.RESTART_ATTEMPT: "0",
}


def localized(plan: planning.Planned, tmp_path: Path) -> PodPlan:
    """The plan's pods made to run in job ``job`` under ``tmp_path``, bound with ``VALUES``."""
    job_dir = JobDir(tmp_path, "job")
    expanded = expand_pods(plan.jobset, str(job_dir.path / "volumes"))
    pods, _ = mpi.localize_mpi_pods(expanded, plan.jobset, plan.others, job_dir, {"PATH", "X"})
    return [(job, [bind(pod, VALUES) for pod in job_pods]) for job, job_pods in pods]


def pods_by_name(plan: PodPlan) -> dict[str, Any]:
    return {pod.name: pod for _, pods in plan for pod in pods}


def test_mpi_jobset_is_told_by_the_launchers_ssh_secret(tmp_path: Path) -> None:
    def is_mpi(plan: planning.Planned, objects: list[dict[str, Any]]) -> bool:
        expanded = expand_pods(plan.jobset)
        setup = mpi.localize_mpi_pods(expanded, plan.jobset, objects, JobDir(tmp_path, "j"), ())
        return setup[1] is not None

    mpi_plan = planned("deepspeed-distributed", 2)
    torch_plan = planned("torch-distributed", 2)
    assert is_mpi(mpi_plan, mpi_plan.others)
    assert not is_mpi(mpi_plan, [])
    assert not is_mpi(torch_plan, torch_plan.others)


def test_non_mpi_plan_is_unchanged(tmp_path: Path) -> None:
    plan = planned("torch-distributed", 2)
    expanded = expand_pods(plan.jobset)
    job_dir = JobDir(tmp_path, "job")
    assert mpi.localize_mpi_pods(expanded, plan.jobset, plan.others, job_dir, ()) == (
        expanded,
        None,
    )


def test_launcher_is_localhost_and_workers_get_their_own_loopback_address() -> None:
    plan = planned("deepspeed-distributed", 3)
    addresses = mpi.host_addresses(expand_pods(plan.jobset))
    assert addresses == {
        "job-launcher-0-0": "localhost",
        "job-node-0-0": "127.0.0.2",
        "job-node-0-1": "127.0.0.3",
    }


ADDRESSES = {"job-launcher-0-0": "localhost", "job-node-0-1": "127.0.0.3"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("job-node-0-1.job slots=2\n", "127.0.0.3 slots=2\n", id="pod-dns-name"),
        pytest.param("job-node-0-1:2", "127.0.0.3:2", id="hydra-format"),
        pytest.param("job-launcher-0-0 slots=1", "localhost slots=1", id="bare-pod-name"),
        pytest.param("job-node-0-10.job", "job-node-0-10.job", id="longer-name-untouched"),
        pytest.param("xjob-node-0-1.job", "xjob-node-0-1.job", id="prefixed-name-untouched"),
    ],
)
def test_map_hosts(text: str, expected: str) -> None:
    assert mpi.map_hosts(text, ADDRESSES) == expected


def test_workers_run_mpi_worker_on_their_address_and_the_jobs_port(tmp_path: Path) -> None:
    pods = pods_by_name(localized(planned("deepspeed-distributed", 3), tmp_path))
    job = tmp_path / "job"
    assert list(pods["job-node-0-1"].command) == [
        "mpi-worker",
        "--ssh-dir",
        str(job / "volumes" / "mpi-ssh-auth"),
        "--port",
        "2345",
        "--listen",
        "127.0.0.3",
        "--state-dir",
        str(job / "pods" / "job-node-0-1" / "sshd"),
    ]
    assert pods["job-node-0-1"].address == "127.0.0.3"


def test_launcher_runs_mpi_launch_on_loopback_with_rank_env(tmp_path: Path) -> None:
    launcher = pods_by_name(localized(planned("deepspeed-distributed", 2), tmp_path))[
        "job-launcher-0-0"
    ]
    job = tmp_path / "job"
    command = list(launcher.command)
    separator = command.index("--")
    options, program = command[:separator], command[separator + 1 :]
    assert options[0] == "mpi-launch"
    hostfile = str(job / "volumes" / "mpi-hostfile" / "hostfile")
    assert options[options.index("--hostfile") + 1] == hostfile
    assert {"--loopback", "--rank-env"} <= set(options)
    assert options[-2:] == ["--ssh-port", "2345"]  # last: the job's port wins over a user's
    assert options[options.index("--ssh-dir") + 1] == str(job / "volumes" / "mpi-ssh-auth")
    exported = {options[i + 1] for i, option in enumerate(options) if option == "-x"}
    # the shims' PATH, the launcher's log for the ranks' output, the TrainJob's env; not MPI's own
    assert exported == {"PATH", "SHLVL", mpi.RANK_LOG_ENV, "LR"}
    assert launcher.env[mpi.RANK_LOG_ENV] == str(job / "logs" / "node-0.log")
    assert launcher.env["PATH"] == f"{job / 'mpi-bin'}:/shims:/usr/bin"
    assert launcher.env["SHLVL"] == "1"
    assert program[:2] == ["bash", "-c"]
    assert "/home/mpiuser" not in program[2]
    assert f"\nwrite {job / 'home'}/" in program[2]  # the training code's file
    assert launcher.env["OMPI_MCA_orte_default_hostfile"] == hostfile
    assert launcher.env["MASTER_PORT"] == "4567"
    assert str(job / "home") in launcher.directories


def launcher_command(plan: planning.Planned, command: list[str]) -> None:
    """Give the plan's MPI launcher ``command``."""
    launcher = plan.jobset["spec"]["replicatedJobs"][1]
    assert launcher["name"] == constants.LAUNCHER
    launcher["template"]["spec"]["template"]["spec"]["containers"][0]["command"] = command


def test_the_jobs_port_in_the_launchers_program_keeps_its_slot(tmp_path: Path) -> None:
    plan = planned("deepspeed-distributed", 2)
    launcher_command(
        plan, ["mpirun", "-np", "2", "python", "t.py", "--peer", "job-node-0-0:29500", "29500"]
    )
    pods = pods_by_name(localized(plan, tmp_path))
    assert pods["job-launcher-0-0"].command[-4:] == ("t.py", "--peer", "127.0.0.1:4567", "29500")


def test_the_jobs_port_in_a_translated_mpirun_option_is_refused(tmp_path: Path) -> None:
    plan = planned("deepspeed-distributed", 2)
    launcher_command(plan, ["mpirun", "-x", "PEER=job-node-0-0:29500", "python", "t.py"])
    with pytest.raises(UnsupportedPodError, match=r"command\[2\]: .* in an mpirun option"):
        localized(plan, tmp_path)


def test_a_launcher_with_its_own_path_keeps_it_after_the_ranks_python(tmp_path: Path) -> None:
    plan = planned("deepspeed-distributed", 2)
    launcher = plan.jobset["spec"]["replicatedJobs"][1]
    container = launcher["template"]["spec"]["template"]["spec"]["containers"][0]
    container.setdefault("env", []).append({"name": "PATH", "value": "/opt/bin"})
    pods = pods_by_name(localized(plan, tmp_path))
    assert pods["job-launcher-0-0"].env["PATH"] == f"{tmp_path / 'job' / 'mpi-bin'}:/opt/bin"


def test_volumes_hold_the_secret_with_its_modes_and_the_mapped_hostfile(tmp_path: Path) -> None:
    plan = planned("deepspeed-distributed", 2)
    addresses = mpi.host_addresses(expand_pods(plan.jobset))
    files = mpi.config_volume_files(
        plan.jobset, plan.others, tmp_path, lambda text: mpi.map_hosts(text, addresses)
    )
    mpi.write_volume_files(files)
    names = {Path(file.path).relative_to(tmp_path).as_posix() for file in files}
    assert names == {
        "mpi-ssh-auth/id_rsa",
        "mpi-ssh-auth/id_rsa.pub",
        "mpi-ssh-auth/authorized_keys",
        "mpi-hostfile/hostfile",
    }
    assert (tmp_path / "mpi-hostfile" / "hostfile").read_text() == (
        "localhost slots=1\n127.0.0.2 slots=1\n"
    )
    key = tmp_path / "mpi-ssh-auth" / "id_rsa"
    assert stat.S_IMODE(key.stat().st_mode) == 0o640  # the volume item's mode, as upstream
    assert "PRIVATE KEY" in key.read_text()
    assert stat.S_IMODE((tmp_path / "mpi-hostfile" / "hostfile").stat().st_mode) == 0o444


def test_secret_data_is_base64_decoded(tmp_path: Path) -> None:
    jobset = {
        "spec": {
            "replicatedJobs": [
                {
                    "name": "launcher",
                    "template": {
                        "spec": {
                            "template": {
                                "spec": {
                                    "volumes": [{"name": "keys", "secret": {"secretName": "s"}}]
                                }
                            }
                        }
                    },
                }
            ]
        }
    }
    secret = {
        "kind": "Secret",
        "metadata": {"name": "s"},
        "data": {"token": base64.b64encode(b"abc").decode()},
    }
    mpi.write_volume_files(mpi.config_volume_files(jobset, [secret], tmp_path))
    assert (tmp_path / "keys" / "token").read_text() == "abc"


def test_an_untranslatable_launcher_is_refused_when_compiled(tmp_path: Path) -> None:
    plan = planned("deepspeed-distributed", 2)
    launcher_command(plan, ["mpirun", "--cpus-per-rank", "2", "python", "t.py"])
    with pytest.raises(UnsupportedPodError, match="'--cpus-per-rank' is not translated"):
        localized(plan, tmp_path)


MPI4PY = ["-c", mpi.LINE_BUFFERED_MPI4PY]


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        pytest.param(["t.py", "--lr", "1"], [*MPI4PY, "t.py", "--lr", "1"], id="script"),
        pytest.param(["-m", "pkg.train"], [*MPI4PY, "-m", "pkg.train"], id="module"),
        pytest.param(["-c", "print(1)"], [*MPI4PY, "-c", "print(1)"], id="code"),
        pytest.param(["-m", "mpi4py", "t.py"], [*MPI4PY, "t.py"], id="already-mpi4py"),
        pytest.param(["-m", "mpi4py", "--version"], [*MPI4PY, "--version"], id="mpi4py-option"),
        pytest.param(["-V"], ["-V"], id="other-option"),
    ],
)
def test_rank_python_runs_programs_through_mpi4py(
    tmp_path: Path, argv: list[str], expected: list[str]
) -> None:
    recorder = tmp_path / "record"
    recorder.write_text('#!/bin/sh\nfor a in "$@"; do echo "$a"; done\n')
    recorder.chmod(0o755)
    mpi.write_rank_shims(tmp_path / "bin", str(recorder))
    result = subprocess.run(
        [str(tmp_path / "bin" / "python"), *argv], capture_output=True, text=True, check=True
    )
    assert result.stdout.splitlines() == expected


def test_a_rank_writes_each_line_whole_even_when_unbuffered(tmp_path: Path) -> None:
    """print() on an unbuffered stream wrote the text and the newline apart, and mpirun put
    another rank's line between them; the ranks' python writes whole lines."""
    pytest.importorskip("mpi4py")
    if shutil.which("strace") is None:
        pytest.skip("needs strace (apt: strace) to see each write")
    mpi.write_rank_shims(tmp_path / "bin", sys.executable)
    code = "import sys\nfor i in range(3): print('line', i); print('err', i, file=sys.stderr)"
    traced = tmp_path / "trace"
    subprocess.run(
        [
            "strace",
            "-f",
            "-e",
            "trace=write",
            "-o",
            str(traced),
            str(tmp_path / "bin" / "python"),
            "-c",
            code,
        ],
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        capture_output=True,
        check=True,
        timeout=60,
    )
    writes = re.findall(r'write\([12], "([^"]*)"', traced.read_text())
    assert writes == [w for i in range(3) for w in (f"line {i}\\n", f"err {i}\\n")]


def test_other_replicated_jobs_run_as_they_are(tmp_path: Path) -> None:
    plan = planned("deepspeed-distributed", 2)
    initializer = {
        "name": constants.DATASET_INITIALIZER,
        "replicas": 1,
        "template": {
            "spec": {
                "template": {
                    "spec": {"containers": [{"name": "init", "command": ["python", "-V"]}]}
                }
            }
        },
    }
    plan.jobset["spec"]["replicatedJobs"].insert(0, initializer)
    pods = pods_by_name(localized(plan, tmp_path))
    assert pods["job-dataset-initializer-0-0"].command == ("python", "-V")
    assert pods["job-node-0-0"].command[0] == "mpi-worker"
    assert "127.0.0.2" in pods["job-node-0-0"].command
