"""What a local job's pods use, read from ``/proc`` (and the job's cgroup) by the client.

A pod is its process and every descendant: one pass over ``/proc`` per sample gives each
process's parent, CPU time (user and system) and resident memory. Where the job has a cgroup
(``supervisor/cgroups.py``), its ``cpu.stat`` and ``memory.current`` give the job's own total.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = ["ProcessTable", "cgroup_usage"]

_PROC: Final = Path("/proc")
_TICKS: Final = os.sysconf("SC_CLK_TCK")
_PAGE: Final = os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True)
class _Process:
    parent: int
    cpu_seconds: float
    rss_bytes: int


class ProcessTable:
    """Every process now: parent, CPU seconds so far (user and system), resident bytes."""

    def __init__(self) -> None:
        self._processes: dict[int, _Process] = {}
        self._children: dict[int, list[int]] = {}
        for entry in os.scandir(_PROC):
            if not entry.name.isdigit():
                continue
            try:
                text = (_PROC / entry.name / "stat").read_text()
            except OSError:
                continue  # gone meanwhile
            fields = text[text.rindex(")") + 2 :].split()  # the name may hold spaces and ')'
            process = _Process(
                parent=int(fields[1]),
                cpu_seconds=(int(fields[11]) + int(fields[12])) / _TICKS,
                rss_bytes=int(fields[21]) * _PAGE,
            )
            self._processes[int(entry.name)] = process
            self._children.setdefault(process.parent, []).append(int(entry.name))

    def tree(self, root: int) -> tuple[float, int]:
        """CPU seconds and resident bytes of ``root`` and its descendants (0, 0: no such one)."""
        cpu, rss, pending, seen = 0.0, 0, [root], set()
        while pending:
            pid = pending.pop()
            process = self._processes.get(pid)
            if process is None or pid in seen:
                continue
            seen.add(pid)
            cpu, rss = cpu + process.cpu_seconds, rss + process.rss_bytes
            pending.extend(self._children.get(pid, ()))
        return cpu, rss


def cgroup_usage(path: Path) -> tuple[float, int] | None:
    """A cgroup's CPU seconds so far and its memory now (None: unreadable, or gone)."""
    try:
        stat = dict(line.split() for line in (path / "cpu.stat").read_text().splitlines())
        return int(stat["usage_usec"]) / 1e6, int((path / "memory.current").read_text())
    except (OSError, KeyError, ValueError):
        return None
