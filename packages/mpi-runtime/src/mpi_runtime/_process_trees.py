"""Stopping a process and everything it started.

mpirun puts each ssh client it starts into a process group of its own, so ending mpirun's group
leaves a hanging ssh behind: the tree is found through ``/proc`` (Linux) before mpirun is asked
to stop, and whatever of it is left after a grace period is killed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from pathlib import Path

__all__ = ["descendants", "stop_process_tree"]


def _parents(proc: Path = Path("/proc")) -> dict[int, int]:
    """pid -> parent pid of every process readable in ``proc``."""
    parents = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            # The command name in parentheses may hold spaces: fields follow the last ')'.
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        parents[int(entry.name)] = int(fields[1])
    return parents


def descendants(pid: int, parents: dict[int, int] | None = None) -> list[int]:
    """Every process below ``pid`` (children first), from ``parents`` or ``/proc``."""
    parents = _parents() if parents is None else parents
    children: dict[int, list[int]] = {}
    for child, parent in sorted(parents.items()):
        children.setdefault(parent, []).append(child)
    found: list[int] = []
    frontier = [pid]
    while frontier:
        below = [child for parent in frontier for child in children.get(parent, [])]
        found += below
        frontier = below
    return found


def stop_process_tree(process: subprocess.Popen[bytes], grace_s: float = 5.0) -> None:
    """SIGTERM ``process``; after ``grace_s`` SIGKILL it and every process it had started."""
    tree = descendants(process.pid)
    with contextlib.suppress(ProcessLookupError):
        process.terminate()
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=grace_s)
    if process.poll() is None:
        process.kill()
    for pid in tree:  # reparented once mpirun is gone; still ours until they exit
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    process.wait()
