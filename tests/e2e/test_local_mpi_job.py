"""Across packages: MPI TrainJobs (trainer-controller's MPI plugin, mpi-runtime's launcher and
worker) run by trainer-sdk's local backend, with real Open MPI, sshd, mpi4py and torch."""

from __future__ import annotations

import re
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from trainer_sdk import CustomTrainer, JobFailedError, LocalBackendConfig, TrainerClient
from trainer_sdk.cli import cli
from waiting import wait_until

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        shutil.which("mpirun") is None or not Path("/usr/sbin/sshd").exists(),
        reason="needs Open MPI's mpirun and /usr/sbin/sshd (apt: openmpi-bin openssh-server)",
    ),
]
pytest.importorskip("mpi4py", reason="needs mpi4py (pip install mpi4py)")
WAIT_SECONDS = 60.0
# DeepSpeed JIT-builds its CPU shared-memory op on first use (minutes on 2 cores), then caches it.
DEEPSPEED_WAIT_SECONDS = 600.0


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TrainerClient]:
    """A local client whose jobs live in this test's directory; its jobs end with it."""
    trainer_client = TrainerClient(LocalBackendConfig(root=tmp_path / "jobs", stop_on_exit=True))
    yield trainer_client
    trainer_client.backend.close()  # type: ignore[attr-defined]


def allreduce_ranks() -> None:
    """Each rank adds rank + 1 with mpi4py and says where it ran."""
    import os

    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    total = comm.allreduce(comm.Get_rank() + 1)
    host = (os.environ.get("SSH_CONNECTION") or "- - launcher").split()[2]
    print(f"rank {comm.Get_rank()} of {comm.Get_size()} on {host}: sum {total}", flush=True)


def test_mpi4py_allreduce_over_two_nodes_through_trainer_client(client: TrainerClient) -> None:
    """deepspeed-distributed is a plain Open MPI runtime with the launcher as rank 0's node."""
    name = client.train(
        runtime=client.get_runtime("deepspeed-distributed"),
        trainer=CustomTrainer(func=allreduce_ranks, num_nodes=2),
    )
    job = client.wait_for_job_status(name, timeout=WAIT_SECONDS)
    launcher_log = "\n".join(client.get_job_logs(name, step="node-0"))
    assert job.status == "Complete", launcher_log
    assert "rank 0 of 2 on launcher: sum 3" in launcher_log
    assert "rank 1 of 2 on 127.0.0.2: sum 3" in launcher_log
    worker_log = "\n".join(client.get_job_logs(name, step="node-1"))
    assert "Server listening on 127.0.0.2" in worker_log
    # The workers' sshd is ended once the launcher completed the JobSet: it read Running, then
    # Failed.
    assert [(step.name, step.status) for step in job.steps] == [
        ("node-0", "Succeeded"),
        ("node-1", "Succeeded"),
    ]


def many_lines() -> None:
    """Each rank prints lines as fast as it can, through print() (text and newline apart when
    unbuffered)."""
    from mpi4py import MPI

    rank = MPI.COMM_WORLD.Get_rank()
    MPI.COMM_WORLD.Barrier()
    for index in range(2000):
        print(f"rank {rank} line {index}")


def test_mpi_ranks_lines_are_never_merged(client: TrainerClient) -> None:
    """About 1 line in 100 read 'rank 0 line 33rank 1 line 32' (PYTHONUNBUFFERED ranks)."""
    name = client.train(
        runtime=client.get_runtime("deepspeed-distributed"),
        trainer=CustomTrainer(func=many_lines, num_nodes=2),
    )
    job = client.wait_for_job_status(name, timeout=WAIT_SECONDS)
    assert job.status == "Complete"
    lines = [line for line in client.get_job_logs(name, step="node-0") if "line" in line]
    merged = [line for line in lines if not re.fullmatch(r"rank [01] line [0-9]+", line)]
    assert merged == [] and len(lines) == 4000


def raises_on_rank_one() -> None:
    """Rank 1 raises after a collective; rank 0 waits in the next one (MPI aborts it)."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    comm.barrier()
    if comm.Get_rank() == 1:
        raise ValueError("bad learning rate on rank 1")
    comm.barrier()


def test_a_failed_mpi_job_names_the_rank_that_raised(client: TrainerClient) -> None:
    name = client.train(
        runtime=client.get_runtime("deepspeed-distributed"),
        trainer=CustomTrainer(func=raises_on_rank_one, num_nodes=2),
    )
    with pytest.raises(JobFailedError) as raised:
        client.wait_for_job_status(name, timeout=WAIT_SECONDS, polling_interval=1)
    first = str(raised.value).splitlines()[0]
    assert "ValueError: bad learning rate on rank 1 (rank 1, step node-0)" in first, first


TORCH_CODE = """
import os
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
value = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(value)
print(f"rank {dist.get_rank()} of {dist.get_world_size()} master {os.environ['MASTER_ADDR']} "
      f"sum {value.item():.0f} lr {os.environ['LR']}", flush=True)
dist.destroy_process_group()
"""


def plain_mpi_files(
    command: list[str], name: str = "mpi-gloo", env: dict[str, str] | None = None
) -> list[dict[str, object]]:
    """A plain MPI runtime (launcher runs no ranks; two sshd workers) and a TrainJob on it."""
    container = {"name": "node", "image": "mpi-image"}
    runtime = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": "mpi-plain", "labels": {"trainer.kubeflow.org/framework": "mpi"}},
        "spec": {
            "mlPolicy": {
                "numNodes": 1,
                "mpi": {
                    "numProcPerNode": 1,
                    "mpiImplementation": "OpenMPI",
                    "sshAuthMountPath": "/home/mpiuser/.ssh",
                    "runLauncherAsNode": False,
                },
            },
            "template": {
                "spec": {
                    "successPolicy": {"operator": "All", "targetReplicatedJobs": ["launcher"]},
                    "replicatedJobs": [
                        {
                            "name": "launcher",
                            "dependsOn": [{"name": "node", "status": "Ready"}],
                            "template": {
                                "metadata": {
                                    "labels": {
                                        "trainer.kubeflow.org/trainjob-ancestor-step": "trainer"
                                    }
                                },
                                "spec": {"template": {"spec": {"containers": [dict(container)]}}},
                            },
                        },
                        {
                            "name": "node",
                            "template": {
                                "spec": {
                                    "template": {
                                        "spec": {
                                            "containers": [
                                                {
                                                    **container,
                                                    "command": ["/usr/sbin/sshd", "-De"],
                                                    "args": ["-f", "/home/mpiuser/.sshd_config"],
                                                }
                                            ]
                                        }
                                    }
                                }
                            },
                        },
                    ],
                }
            },
        },
    }
    trainjob = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name},
        "spec": {
            "runtimeRef": {"name": "mpi-plain"},
            "trainer": {
                "numNodes": 2,
                "command": command,
                "env": [
                    {"name": key, "value": value}
                    for key, value in (env if env is not None else {"LR": "0.1"}).items()
                ],
            },
        },
    }
    return [runtime, trainjob]


def run_two_torch_ranks(tmp_path: Path, command: list[str], name: str) -> None:
    """``trainer run -f`` of a plain MPI TrainJob whose ranks run TORCH_CODE; both reported."""
    manifest = tmp_path / "mpi-trainjob.yaml"
    manifest.write_text(yaml.safe_dump_all(plain_mpi_files(command, name)))
    result = CliRunner().invoke(
        cli,
        ["--backend", "local", "--root", str(tmp_path / "jobs"), "run", "-f", str(manifest)],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.stdout
    # rank 0 runs on the first worker, 127.0.0.2, which is MASTER_ADDR; LR reached both ranks
    assert "[node-0] rank 0 of 2 master 127.0.0.2 sum 3 lr 0.1" in result.stdout
    assert "[node-0] rank 1 of 2 master 127.0.0.2 sum 3 lr 0.1" in result.stdout


def test_torch_gloo_over_mpi_from_a_trainjob_yaml(tmp_path: Path) -> None:
    """``trainer run -f``: a plain MPI runtime and TrainJob, torch.distributed from the rank env."""
    command = ["mpirun", "--hostfile", "/etc/mpi/hostfile", "python", "-c", TORCH_CODE]
    run_two_torch_ranks(tmp_path, command, "mpi-gloo")
    hostfile = tmp_path / "jobs" / "mpi-gloo" / "volumes" / "mpi-hostfile" / "hostfile"
    assert hostfile.read_text() == "127.0.0.2 slots=1\n127.0.0.3 slots=1\n"


def test_a_deepspeed_launcher_line_runs_as_its_mpi_launcher_would(tmp_path: Path) -> None:
    """``deepspeed --launcher openmpi ... SCRIPT`` from a TrainJob runs the script on every slot."""
    script = tmp_path / "train.py"
    script.write_text(TORCH_CODE)
    command = [
        "deepspeed", "--hostfile", "/etc/mpi/hostfile", "--launcher", "openmpi",
        "--launcher_args", "--bind-to none --map-by slot", "--master_port", "29500", str(script),
    ]  # fmt: skip
    run_two_torch_ranks(tmp_path, command, "mpi-deepspeed")


def failing_rank() -> None:
    """Rank 1 raises while rank 0 waits for it in a collective."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    if comm.Get_rank() == 1:
        raise ValueError("rank 1 fails on purpose")
    comm.allreduce(1)


def test_a_failing_rank_fails_the_job_quickly_and_keeps_its_log(client: TrainerClient) -> None:
    name = client.train(
        runtime=client.get_runtime("mlx-distributed"),
        trainer=CustomTrainer(func=failing_rank, num_nodes=2),
    )
    started = time.monotonic()
    with pytest.raises(RuntimeError, match="failed"):
        client.wait_for_job_status(name, timeout=WAIT_SECONDS)
    assert time.monotonic() - started < 30.0
    assert client.get_job(name).status == "Failed"
    launcher_log = "\n".join(client.get_job_logs(name, step="node-0"))
    assert "ValueError: rank 1 fails on purpose" in launcher_log
    assert "MPI_ABORT was invoked on rank 1" in launcher_log


def waiting_ranks() -> None:
    """Every rank says it is up, then waits (bounded) to be ended."""
    import os
    import time

    from mpi4py import MPI

    # One write per line: print() writes the text and the newline apart, and mpirun can put
    # another rank's line between them ("rank 0 uprank 2 up", seen in 2 of 7 runs).
    os.write(1, f"rank {MPI.COMM_WORLD.Get_rank()} up\n".encode())
    time.sleep(60)


def processes_mentioning(text: str) -> list[str]:
    """Command lines of live (not zombie) processes that contain ``text``."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            command = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if text in command and state != "Z":
            found.append(command)
    return found


def test_delete_ends_every_process_of_the_job_sshd_included(
    client: TrainerClient, tmp_path: Path
) -> None:
    name = client.train(
        runtime=client.get_runtime("deepspeed-distributed"),
        trainer=CustomTrainer(func=waiting_ranks, num_nodes=3),
    )
    up: set[str] = set()
    for line in client.get_job_logs(name, step="node-0", follow=True):
        if line.endswith(" up"):
            up.add(line)
        if len(up) == 3:
            break
    assert up == {f"rank {rank} up" for rank in range(3)}, "the job ended before every rank was up"
    job_dir = str(tmp_path / "jobs" / name)
    running = processes_mentioning(job_dir)
    assert sum("sshd" in command for command in running) == 2
    client.delete_job(name)
    wait_until(lambda: processes_mentioning(job_dir) == [], "every process of the job to end")


# mpirun's ssh, hanging for one host: its MPI daemon never starts there (the hang seen in CI).
HANGING_SSH = """#!/bin/sh
for arg in "$@"; do
  if [ "$arg" = "$HANG_HOST" ]; then exec sleep 600; fi
done
exec ssh "$@"
"""


def test_ranks_that_never_start_fail_the_job_within_the_start_bound(tmp_path: Path) -> None:
    """Both workers' sshd answer (the host wait passes), then 127.0.0.3's orted never starts:
    the TrainJob fails within the bound, naming that host, and the launcher's log is kept."""
    hanging_ssh = tmp_path / "hanging-ssh"
    hanging_ssh.write_text(HANGING_SSH)
    hanging_ssh.chmod(0o755)
    command = ["mpirun", "--mca", "plm_rsh_agent", str(hanging_ssh), "python", "-c", "pass"]
    env = {"MPI_LAUNCH_START_TIMEOUT": "4", "HANG_HOST": "127.0.0.3"}
    manifest = tmp_path / "hanging.yaml"
    manifest.write_text(yaml.safe_dump_all(plain_mpi_files(command, "mpi-hang", env)))
    root = tmp_path / "jobs"
    started = time.monotonic()
    result = CliRunner().invoke(
        cli, ["--backend", "local", "--root", str(root), "run", "-f", str(manifest)]
    )
    assert result.exit_code != 0, result.stdout
    assert time.monotonic() - started < 45, "start bound 4 s, stop grace 5 s, job start-up"
    client = TrainerClient(LocalBackendConfig(root=root))
    try:
        assert client.get_job("mpi-hang").status == "Failed"
        with pytest.raises(RuntimeError, match=r"ranks never started on host\(s\) 127\.0\.0\.3 "):
            client.wait_for_job_status("mpi-hang", timeout=WAIT_SECONDS)
        launcher_log = "\n".join(client.get_job_logs("mpi-hang", step="node-0"))
    finally:
        client.backend.close()  # type: ignore[attr-defined]
    assert "mpi-launch: error: ranks never started on host(s) 127.0.0.3 within 4s" in launcher_log


def deepspeed_ranks() -> None:
    """Two ranks initialise DeepSpeed's distributed backend from the MPI rank env."""
    import deepspeed
    import torch.distributed as dist

    deepspeed.init_distributed(dist_backend="gloo")
    print(f"deepspeed rank {dist.get_rank()} of {dist.get_world_size()}", flush=True)


def test_deepspeed_distributed_runtime_initialises_deepspeed(client: TrainerClient) -> None:
    pytest.importorskip("deepspeed", reason="deepspeed is not installed (pip install deepspeed)")
    name = client.train(
        runtime=client.get_runtime("deepspeed-distributed"),
        trainer=CustomTrainer(func=deepspeed_ranks, num_nodes=2, env={"DS_ACCELERATOR": "cpu"}),
    )
    job = client.wait_for_job_status(name, timeout=DEEPSPEED_WAIT_SECONDS)
    launcher_log = "\n".join(client.get_job_logs(name, step="node-0"))
    assert job.status == "Complete", launcher_log
    assert "deepspeed rank 0 of 2" in launcher_log
    assert "deepspeed rank 1 of 2" in launcher_log


def interpreter_of_ranks() -> None:
    """Each rank prints its Python environment (a venv's prefix) and the job's env."""
    import os
    import sys

    print(f"interpreter {sys.prefix} LR {os.environ['LR']}", flush=True)


def test_job_env_is_not_lost_on_worker_hosts(
    client: TrainerClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ranks started over ssh keep the job's interpreter and env, as the launcher's ranks do
    (also when the client was not started from a shell: no SHLVL, so a bash that sshd
    started would read ~/.bashrc)."""
    monkeypatch.delenv("SHLVL", raising=False)
    name = client.train(
        runtime=client.get_runtime("deepspeed-distributed"),
        trainer=CustomTrainer(func=interpreter_of_ranks, num_nodes=2, env={"LR": "0.5"}),
    )
    client.wait_for_job_status(name, timeout=WAIT_SECONDS)
    launcher_log = "\n".join(client.get_job_logs(name, step="node-0"))
    lines = [line for line in launcher_log.splitlines() if line.startswith("interpreter ")]
    assert len(lines) == 2, launcher_log
    assert len(set(lines)) == 1, lines  # the same interpreter and LR on both hosts
    assert lines[0] == f"interpreter {sys.prefix} LR 0.5"
