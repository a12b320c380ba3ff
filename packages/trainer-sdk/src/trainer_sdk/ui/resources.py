"""CPU and memory of each pod of the running jobs, as the UI charts them.

The backend samples what each pod uses (``RuntimeBackend.sample_resources``: CPU seconds so far
and resident bytes); a pod's CPU is the growth of its CPU time over the wall time between two
samples (100 = one core), its memory the resident bytes. Bounded: ``MAX_SAMPLES`` per pod, and a
job's samples are dropped when it is gone from the index.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any, Final

__all__ = ["MAX_SAMPLES", "ResourceHistory"]

MAX_SAMPLES: Final = 1800


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
