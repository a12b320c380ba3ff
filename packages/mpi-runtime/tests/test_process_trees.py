"""Finding and stopping a process tree (mpirun and the ssh clients in their own groups)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from mpi_runtime._process_trees import descendants, stop_process_tree
from waiting import wait_until

# A parent that starts a child in a session of its own (as mpirun does with ssh) that ignores
# SIGTERM, writes the child's pid, then waits.
PARENT = """
import subprocess, sys, time
subprocess.Popen(["sh", "-c", "trap '' TERM; echo $$ > " + sys.argv[1] + "; exec sleep 600"],
                 start_new_session=True)
time.sleep(600)
"""


@pytest.mark.parametrize(
    ("parents", "expected"),
    [
        pytest.param({2: 1, 3: 1, 4: 2}, [2, 3, 4], id="children-then-grandchildren"),
        pytest.param({2: 9}, [], id="none"),
    ],
)
def test_descendants(parents: dict[int, int], expected: list[int]) -> None:
    assert descendants(1, parents) == expected


def test_stop_process_tree_kills_a_child_in_its_own_session_that_ignores_sigterm(
    tmp_path: Path, ends_within: Callable[[int, float], bool]
) -> None:
    pid_file = tmp_path / "child.pid"
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(pid_file)])
    try:
        wait_until(lambda: pid_file.exists() and pid_file.read_text().strip(), "the child")
        child = int(pid_file.read_text())
        assert not ends_within(child, 0.2), "the child ended by itself"
        stop_process_tree(parent, grace_s=0.5)
    finally:
        parent.kill()
        parent.wait()
    assert ends_within(child, 10.0)
