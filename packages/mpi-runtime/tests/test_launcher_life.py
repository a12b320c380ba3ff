"""mpirun, its ranks and what they start do not outlive ``mpi-launch`` (real Open MPI)."""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from mpi_runtime._process_trees import descendants

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux only"),
]

# Each rank starts a child in a session of its own that ignores SIGTERM (a DataLoader worker, a
# server a rank forgot), reports both pids, then rank 1 raises (the job aborts) or all wait.
RANK = """\
import os, subprocess, sys, time
from mpi4py import MPI
child = subprocess.Popen(["sh", "-c", "trap '' TERM; exec sleep 600"], start_new_session=True)
os.write(1, f"ready {os.getpid()} {child.pid}\\n".encode())
MPI.COMM_WORLD.barrier()
if sys.argv[1] == "abort" and MPI.COMM_WORLD.rank == 1:
    raise RuntimeError("rank 1 gives up")
time.sleep(600)
"""
BOUND_S = 60.0


def start_ranks(
    tmp_path: Path, start: Callable[..., subprocess.Popen[str]], mode: str
) -> tuple[subprocess.Popen[str], list[int]]:
    """mpi-launch running two RANKs; it and the pids of the ranks and of their children."""
    script = tmp_path / "rank.py"
    script.write_text(RANK)
    launcher = start("--np", "2", "--oversubscribe", "--", sys.executable, str(script), mode)
    lines: queue.Queue[str] = queue.Queue()

    def read_lines() -> None:
        assert launcher.stdout is not None
        for line in launcher.stdout:
            lines.put(line)

    threading.Thread(target=read_lines, daemon=True).start()
    pids = []
    for _ in range(2):
        try:
            pids += [int(pid) for pid in lines.get(timeout=120).split()[1:]]
        except queue.Empty:
            launcher.kill()
            raise AssertionError("the ranks never started") from None
    return launcher, pids


def test_kill_9_of_mpi_launch_ends_mpirun_and_its_ranks(
    tmp_path: Path,
    mpi_launch_process: Callable[..., subprocess.Popen[str]],
    ends_within: Callable[[int, float], bool],
    open_mpi: None,
) -> None:
    launcher, pids = start_ranks(tmp_path, mpi_launch_process, "wait")
    ranks = pids[0::2]
    mpirun = [pid for pid in descendants(launcher.pid) if pid not in pids]
    launcher.send_signal(signal.SIGKILL)
    launcher.wait(timeout=30)
    try:
        assert all(ends_within(pid, BOUND_S) for pid in [*ranks, *mpirun]), (
            "mpirun or ranks outlived a killed mpi-launch"
        )
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_an_aborted_job_leaves_no_process_its_ranks_started(
    tmp_path: Path,
    mpi_launch_process: Callable[..., subprocess.Popen[str]],
    ends_within: Callable[[int, float], bool],
    open_mpi: None,
) -> None:
    launcher, pids = start_ranks(tmp_path, mpi_launch_process, "abort")
    try:
        code = launcher.wait(timeout=BOUND_S)
        assert code != 0
        assert all(ends_within(pid, 1.0) for pid in pids), "processes outlived mpi-launch"
    finally:
        launcher.kill()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
