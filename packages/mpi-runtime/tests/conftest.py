"""Shared fixtures: loopback "hosts" with real sshd workers, and the MPI installations found."""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from mpi_runtime import generate_ssh_keypair, wait_for_hosts, write_ssh_auth

REPO_ROOT = Path(__file__).resolve().parents[3]
HELLO = r"""
import os
from mpi4py import MPI
comm = MPI.COMM_WORLD
total = comm.allreduce(comm.rank, op=MPI.SUM)
server = (os.environ.get("SSH_CONNECTION") or "- - local -").split()[2]
library = MPI.Get_library_version().split()[0]
line = f"rank {comm.rank} {comm.size} {total} {server} {os.environ.get('MASTER_ADDR')} {library}\n"
os.write(1, line.encode())  # one write per line: ranks' lines never interleave
"""


def _mpi_prefix(name: str) -> Path | None:
    """An MPI installed from its PyPI wheel with ``pip install --prefix`` (env var or .venv-NAME).

    Kept out of the test environment's bin/ so its ``mpirun`` never shadows the system one.
    """
    variable = f"MPI_RUNTIME_{name.upper()}_PREFIX"
    prefix = Path(os.environ.get(variable, REPO_ROOT / f".venv-{name}"))
    return prefix if (prefix / "bin" / "mpirun").exists() else None


def _entrypoint(script: str, module: str) -> list[str]:
    """The installed console script, else ``python -m mpi_runtime.MODULE``."""
    installed = Path(sys.executable).parent / script
    return (
        [str(installed)] if installed.exists() else [sys.executable, "-m", f"mpi_runtime.{module}"]
    )


def mpi_launch_argv(*args: str) -> list[str]:
    """The argv of ``mpi-launch ARGS``."""
    return [*_entrypoint("mpi-launch", "launches"), *args]


def _mpi_launch(*args: str, timeout: float = 120, **env: str) -> subprocess.CompletedProcess[str]:
    """Run ``mpi-launch ARGS`` as a user would, capturing its output."""
    return subprocess.run(
        mpi_launch_argv(*args),
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **env},
    )


@dataclass(frozen=True)
class LoopbackCluster:
    """Worker sshds, one per loopback address, all on ``port``, trusting ``ssh_dir``'s key."""

    hosts: list[str]
    port: int
    ssh_dir: Path


def _free_port(address: str) -> int:
    with socket.socket() as probe:
        probe.bind((address, 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def mpi_launch() -> Callable[..., subprocess.CompletedProcess[str]]:
    """``mpi_launch(*args, timeout=120, **env)``: run ``mpi-launch ARGS`` with extra env."""
    return _mpi_launch


@pytest.fixture
def mpi_launch_process() -> Callable[..., subprocess.Popen[str]]:
    """``mpi_launch_process(*args)``: start ``mpi-launch ARGS`` with its stdout piped."""

    def start(*args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            mpi_launch_argv(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )

    return start


def _is_running(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie (killed, not yet reaped)."""
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _ends_within(pid: int, seconds: float) -> bool:
    """Whether process ``pid`` is gone (or a zombie) within ``seconds``."""
    deadline = time.monotonic() + seconds
    while _is_running(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)  # polling, with a deadline, for the kernel to end a killed process
    return True


@pytest.fixture
def ends_within() -> Callable[[int, float], bool]:
    """``ends_within(pid, seconds)``: whether that process is gone within ``seconds``."""
    return _ends_within


@pytest.fixture
def mpi_prefix() -> Callable[[str], Path | None]:
    """``mpi_prefix(name)``: where the PyPI wheel of MPI ``name`` is installed, or None."""
    return _mpi_prefix


@pytest.fixture
def open_mpi() -> None:
    """Skip unless Open MPI's mpirun and mpi4py are installed."""
    if shutil.which("mpirun") is None:
        pytest.skip("mpirun is not installed (apt-get install openmpi-bin libopenmpi-dev)")
    if importlib.util.find_spec("mpi4py") is None:
        pytest.skip("mpi4py is not installed (pip install mpi4py)")


@pytest.fixture
def hello_script(tmp_path: Path, open_mpi: None) -> Path:
    script = tmp_path / "hello.py"
    script.write_text(HELLO)
    return script


@pytest.fixture
def loopback_cluster(tmp_path: Path) -> Iterator[LoopbackCluster]:
    if shutil.which("sshd", path=f"{os.environ.get('PATH', '')}:/usr/sbin") is None:
        pytest.skip("sshd is not installed (apt-get install openssh-server)")
    ssh_dir = tmp_path / "ssh"
    write_ssh_auth(ssh_dir, generate_ssh_keypair())
    hosts = ["127.0.0.2", "127.0.0.3"]
    port = _free_port(hosts[0])
    workers = []
    for index, host in enumerate(hosts):
        log = (tmp_path / f"worker-{index}.log").open("w")
        workers.append(
            subprocess.Popen(
                [*_entrypoint("mpi-worker", "workers"), "--ssh-dir", str(ssh_dir),
                 "--port", str(port), "--listen", host, "--state-dir", str(tmp_path / f"w{index}")],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        )  # fmt: skip
    try:
        wait_for_hosts(hosts, port, 30.0)
        yield LoopbackCluster(hosts=hosts, port=port, ssh_dir=ssh_dir)
    finally:
        for worker in workers:
            worker.terminate()
        for worker in workers:
            worker.wait(timeout=10)
