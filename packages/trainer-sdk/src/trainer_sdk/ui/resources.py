"""CPU and memory of each pod of the running local jobs, sampled by the UI from ``/proc``.

A pod is its process and every descendant (one pass over ``/proc`` per sample gives each
process's parent, CPU time and resident memory); a pod's CPU is the growth of its processes'
user and system time over the wall time between two samples (100 = one core), its memory the sum
of their resident sets. Where the job has a cgroup (``backends/local/supervisor/cgroups.py``), its
``memory.current`` and ``cpu.stat`` give the job's own total too. Bounded: ``MAX_SAMPLES`` per
pod, and a job's samples are dropped when it is gone from the index.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

__all__ = ["MAX_SAMPLES", "ProcessTable", "ResourceHistory", "cgroup_usage"]

MAX_SAMPLES: Final = 1800
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


class ResourceHistory:
    """Samples per job and pod: wall time, CPU percent, resident bytes; thread-safe."""

    def __init__(self, max_samples: int = MAX_SAMPLES) -> None:
        self._lock = threading.Lock()
        self._max = max_samples
        self._series: dict[str, dict[str, deque[tuple[float, float, int]]]] = {}
        self._last: dict[tuple[str, str], tuple[float, float]] = {}  # wall, CPU seconds

    def record(self, job: str, usage: Mapping[str, tuple[float, int]], now: float) -> None:
        """One sample of ``job``: CPU seconds so far and resident bytes per pod (or "job")."""
        with self._lock:
            series = self._series.setdefault(job, {})
            for pod, (cpu, rss) in usage.items():
                last = self._last.get((job, pod))
                self._last[(job, pod)] = (now, cpu)
                if last is None or now <= last[0]:
                    continue  # a rate needs two samples
                percent = max(0.0, 100 * (cpu - last[1]) / (now - last[0]))
                kept = series.setdefault(pod, deque(maxlen=self._max))
                kept.append((now, percent, rss))

    def keep_only(self, jobs: Iterable[str]) -> None:
        """Forget the jobs not in ``jobs`` (deleted)."""
        wanted = set(jobs)
        with self._lock:
            for job in [job for job in self._series if job not in wanted]:
                del self._series[job]
            self._last = {key: value for key, value in self._last.items() if key[0] in wanted}

    def series(self, job: str) -> dict[str, Any]:
        """``metric_series``' shape: per chart ("cpu %", "memory MiB"), per pod: seconds since
        the first sample (x), the values (y) and the wall times (t)."""
        with self._lock:
            pods = {pod: list(samples) for pod, samples in self._series.get(job, {}).items()}
        start = min((samples[0][0] for samples in pods.values() if samples), default=0.0)
        charts: dict[str, dict[str, dict[str, list[float]]]] = {"cpu %": {}, "memory MiB": {}}
        for pod, samples in sorted(pods.items()):
            times = [at for at, _, _ in samples]
            x = [round(at - start, 1) for at in times]
            charts["cpu %"][pod] = {
                "x": x,
                "y": [round(cpu, 1) for _, cpu, _ in samples],
                "t": times,
            }
            memory = [round(rss / 2**20, 1) for _, _, rss in samples]
            charts["memory MiB"][pod] = {"x": x, "y": memory, "t": times}
        count = sum(len(samples) for samples in pods.values())
        return {"count": count, "metrics": charts if count else {}}
