"""What a local job's pods use: a process tree read from /proc."""

from __future__ import annotations

import os
import subprocess
import sys

from trainer_sdk.backends.local.usage import ProcessTable
from waiting import wait_until


def test_a_process_tree_sums_its_descendants() -> None:
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "b = bytearray(64 << 20); b[::4096] = b'x' * len(b[::4096])"
            "; import time; time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
    )
    try:
        wait_until(lambda: ProcessTable().tree(child.pid)[1] >= 64 << 20, "the child's memory")
        table = ProcessTable()
        _, mine = table.tree(os.getpid())
        _, alone = table.tree(child.pid)
        assert alone >= 64 << 20  # the child's touched bytearray
        assert mine >= alone  # this process's tree holds the child
        assert ProcessTable().tree(2**22 + 1) == (0.0, 0)  # no such process
    finally:
        child.kill()
        child.wait(timeout=30)
