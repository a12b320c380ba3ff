"""Fault injection against the local backend's process supervision, with real processes.

Unstartable pods, processes that try to escape the job (a rank that ignores SIGTERM, a ``setsid``
grandchild, a double fork, a child with an emptied environment), recorded PIDs that now belong to
an unrelated process, and a supervisor killed with SIGKILL. Every wait is bounded; nothing leaves
loopback. The pods are small shell commands (the local backend runs any container command).
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from trainer_sdk import (
    CustomTrainerContainer,
    JobFailedError,
    LocalBackendConfig,
    Name,
    TrainerClient,
    TrainerCommand,
    constants,
)
from trainer_sdk.backends.local.jobdir import JobDir
from trainer_sdk.backends.local.supervisor import cgroups
from trainer_sdk.private_files import read_json, write_json
from waiting import wait_until

pytestmark = pytest.mark.e2e
# Generous for a loaded 2-core machine; a hang is what these tests exist to catch.
DEADLINE_SECONDS = 90.0


def processes_with(marker: str) -> list[int]:
    """PIDs of live (non-zombie) processes whose command line contains ``marker``."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            cmdline = Path(entry.path, "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TrainerClient]:
    trainer_client = TrainerClient(LocalBackendConfig(root=tmp_path / "jobs", stop_on_exit=True))
    yield trainer_client
    trainer_client.backend.close()  # type: ignore[attr-defined]


def job_dir(client: TrainerClient, name: str) -> JobDir:
    return JobDir(client.backend.root, name)  # type: ignore[attr-defined]


def run_command(client: TrainerClient, name: str, command: list[str]) -> str:
    return client.train(
        trainer=CustomTrainerContainer(image="i"), options=[Name(name), TrainerCommand(command)]
    )


def escaping_script(marker: str, then: str) -> str:
    """A pod that leaves behind, each sleeping ``marker`` seconds: a child in a new session that
    ignores SIGTERM, a double-forked grandchild, and a child with an emptied environment in a
    new session; then runs ``then``."""
    return (
        f"setsid bash -c 'trap \"\" TERM; exec sleep {marker}' & "
        f"( sleep {marker} & ) ; "
        f"env -i setsid sleep {marker} & "
        f"{then}"
    )


# The pod's own ``sleep`` (its shell execs it) and its three escapees.
RUNNING_PROCESSES = 4


def unique_marker() -> str:
    """A sleep duration no other process on this machine uses: it names the test's processes."""
    return f"{3000 + secrets.randbelow(1000)}.{secrets.randbelow(10**6):06d}"


# -- unstartable pods ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("command", "reason"),
    [
        pytest.param(["no-such-command-7b1d"], "No such file or directory", id="missing-command"),
        pytest.param(["echo", "x" * 200_000], "Argument list too long", id="argument-over-128KiB"),
    ],
)
def test_a_pod_that_cannot_start_fails_the_job_with_the_reason(
    client: TrainerClient, command: list[str], reason: str
) -> None:
    name = run_command(client, "unstartable", command)
    with pytest.raises(JobFailedError) as raised:
        client.wait_for_job_status(name, timeout=DEADLINE_SECONDS, polling_interval=0.2)
    job = client.get_job(name)
    assert job.status == constants.TRAINJOB_FAILED
    assert "could not start" in (job.message or "") and reason in (job.message or "")
    assert reason in "\n".join(client.get_job_logs(name))
    assert "could not start" in str(raised.value)


# -- escaping processes ----------------------------------------------------------------------------
def test_job_completion_leaves_no_process_behind(client: TrainerClient) -> None:
    marker = unique_marker()
    name = run_command(client, "escapes", ["bash", "-c", escaping_script(marker, "exit 0")])
    job = client.wait_for_job_status(name, timeout=DEADLINE_SECONDS, polling_interval=0.2)
    assert job.status == constants.TRAINJOB_COMPLETE
    assert processes_with(marker) == []


def test_delete_ends_every_process_of_the_job_even_those_ignoring_sigterm(
    client: TrainerClient,
) -> None:
    marker = unique_marker()
    script = escaping_script(marker, f"trap '' TERM; sleep {marker}")
    name = run_command(client, "stubborn", ["bash", "-c", script])
    wait_until(lambda: len(processes_with(marker)) >= RUNNING_PROCESSES, "the pod and escapees")
    client.delete_job(name)
    assert processes_with(marker) == []
    assert not job_dir(client, name).path.exists()


def test_a_detached_job_deleted_by_another_client_leaves_nothing(tmp_path: Path) -> None:
    root = tmp_path / "jobs"
    marker = unique_marker()
    first = TrainerClient(LocalBackendConfig(root=root))  # its jobs outlive it
    name = run_command(
        first, "detached", ["bash", "-c", escaping_script(marker, f"sleep {marker}")]
    )
    wait_until(lambda: len(processes_with(marker)) >= RUNNING_PROCESSES, "the pod and escapees")
    TrainerClient(LocalBackendConfig(root=root)).delete_job(name)
    assert processes_with(marker) == []


def test_with_stop_on_exit_the_clients_exit_ends_every_process_of_its_jobs(tmp_path: Path) -> None:
    root = tmp_path / "jobs"
    marker = unique_marker()
    script = escaping_script(marker, f"sleep {marker}")
    program = (
        "import sys\n"
        "from trainer_sdk import (CustomTrainerContainer, LocalBackendConfig, Name,\n"
        "    TrainerClient, TrainerCommand)\n"
        f"client = TrainerClient(LocalBackendConfig(root={str(root)!r}, stop_on_exit=True))\n"
        "client.train(trainer=CustomTrainerContainer(image='i'), options=[Name('left'),\n"
        f"    TrainerCommand(['bash', '-c', {script!r}])])\n"
        "sys.stdin.readline()\n"
    )
    with subprocess.Popen([sys.executable, "-c", program], stdin=subprocess.PIPE) as client:
        wait_until(lambda: len(processes_with(marker)) >= RUNNING_PROCESSES, "the job's processes")
        client.kill()  # however it exits
    directory = JobDir(root, "left")
    wait_until(lambda: read_json(directory.state).get("finished"), "the job to end")
    assert processes_with(marker) == []


# -- a supervisor killed outright ------------------------------------------------------------------
def supervisor_processes(directory: JobDir) -> list[int]:
    """The recorded supervisor process first, then any process it forked to run the job."""
    wait_until(lambda: directory.supervisor_pid.is_file(), "supervisor.pid")
    recorded = int(directory.supervisor_pid.read_text().split()[0])
    forked = [
        pid
        for pid in processes_with("trainer_sdk.backends.local.supervisor")
        if pid != recorded and str(directory.path) in Path(f"/proc/{pid}/cmdline").read_text()
    ]
    return [recorded, *forked]


def forked_supervisor(directory: JobDir) -> int:
    found: list[int] = []

    def forked() -> bool:
        found[:] = supervisor_processes(directory)[1:]
        return len(found) == 1

    wait_until(forked, "the process the supervisor forks to run the job")
    return found[0]


@pytest.mark.parametrize("victim", ["recorded-supervisor", "its-fork"])
def test_killing_a_supervisor_process_ends_the_job_and_fails_it(
    client: TrainerClient, victim: str
) -> None:
    marker = unique_marker()
    script = escaping_script(marker, f"sleep {marker}")
    name = run_command(client, "orphaned", ["bash", "-c", script])
    directory = job_dir(client, name)
    wait_until(lambda: len(processes_with(marker)) >= RUNNING_PROCESSES, "the pod and escapees")
    pid = (
        supervisor_processes(directory)[0]
        if victim == "recorded-supervisor"
        else forked_supervisor(directory)
    )
    os.kill(pid, signal.SIGKILL)
    with pytest.raises(JobFailedError, match="SupervisorLost"):
        client.wait_for_job_status(name, timeout=DEADLINE_SECONDS, polling_interval=0.2)
    wait_until(lambda: processes_with(marker) == [], "the job's processes to be ended")
    assert client.get_job(name).status == constants.TRAINJOB_FAILED
    cgroup = read_json(directory.state).get("cgroup")
    if cgroup:  # where cgroup v2 is writable, the surviving process removes it
        wait_until(lambda: not Path(cgroup).exists(), "the job's cgroup to be removed")


def test_a_job_whose_supervisor_processes_all_died_reads_failed_and_delete_ends_it(
    client: TrainerClient,
) -> None:
    marker = unique_marker()
    name = run_command(client, "abandoned", ["bash", "-c", f"sleep {marker}"])
    directory = job_dir(client, name)
    wait_until(lambda: processes_with(marker), "the pod")
    every = supervisor_processes(directory)
    for pid in every:  # stopped first: none can react to another's death
        os.kill(pid, signal.SIGSTOP)
    for pid in every:
        os.kill(pid, signal.SIGKILL)
    job = None

    def failed() -> bool:
        nonlocal job
        job = client.get_job(name)
        return job.status == constants.TRAINJOB_FAILED

    wait_until(failed, "the job to read Failed")
    assert job is not None and "SupervisorLost" in (job.message or "")
    assert processes_with(marker), "the pod should have outlived them (or this tests nothing)"
    client.delete_job(name)
    assert processes_with(marker) == []


def cgroups_writable() -> bool:
    probe = cgroups.create("probe")
    if probe is None:
        return False
    cgroups.remove(probe)
    return True


@pytest.mark.skipif(not cgroups_writable(), reason="cgroup v2 is not writable here")
def test_with_a_cgroup_delete_ends_even_what_left_the_tree_and_its_environment(
    client: TrainerClient,
) -> None:
    """Both supervisor processes killed at once: only the job's cgroup still knows the escapees."""
    marker = unique_marker()
    name = run_command(
        client, "cgrouped", ["bash", "-c", escaping_script(marker, f"sleep {marker}")]
    )
    directory = job_dir(client, name)
    wait_until(lambda: len(processes_with(marker)) >= RUNNING_PROCESSES, "the pod and escapees")
    every = supervisor_processes(directory)
    for pid in every:
        os.kill(pid, signal.SIGSTOP)
    for pid in every:
        os.kill(pid, signal.SIGKILL)
    wait_until(lambda: client.get_job(name).status == constants.TRAINJOB_FAILED, "Failed")
    assert len(processes_with(marker)) >= RUNNING_PROCESSES
    cgroup = Path(read_json(directory.state)["cgroup"])
    client.delete_job(name)
    assert processes_with(marker) == []
    assert not cgroup.exists()


# -- PID reuse -------------------------------------------------------------------------------------
@pytest.mark.parametrize("supervisor_record", ["pid-only", "pid-with-another-start-time"])
def test_delete_never_signals_a_recorded_pid_that_is_no_longer_the_jobs(
    client: TrainerClient, supervisor_record: str
) -> None:
    """The job's PIDs were reused: the recorded supervisor and 'Running' pod are now a stranger."""
    name = run_command(client, "finished", ["true"])
    client.wait_for_job_status(name, timeout=DEADLINE_SECONDS, polling_interval=0.2)
    directory = job_dir(client, name)
    stranger = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        state = read_json(directory.state)
        for pod in state["pods"]:
            pod["pid"], pod["phase"] = stranger.pid, constants.POD_RUNNING
        write_json(directory.state, state)
        recorded = directory.supervisor_pid.read_text().split()
        directory.supervisor_pid.write_text(
            str(stranger.pid)
            if supervisor_record == "pid-only"
            else f"{stranger.pid} {recorded[1] if len(recorded) > 1 else 1}"
        )
        # As `trainer delete` does: a client that did not start the job.
        TrainerClient(LocalBackendConfig(root=directory.root)).delete_job(name)
        assert stranger.poll() is None, "delete_job signalled a process that is not the job's"
    finally:
        stranger.kill()
        stranger.wait()
