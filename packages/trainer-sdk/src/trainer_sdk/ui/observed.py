"""A cluster job's metric history as the UI saw it: each new ``trainerStatus`` is one point.

A cluster keeps only the latest values (in ``status.trainerStatus``, at most one update per
5 s per job from the SDK); the UI server samples them while it runs, so its charts start when it
started watching. Bounded: ``MAX_POINTS`` per job, oldest dropped first.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Final

from trainer_sdk.metrics import MetricPoint

__all__ = ["MAX_POINTS", "ObservedHistory"]

MAX_POINTS: Final = 10_000


class ObservedHistory:
    """Points per job, appended when the job's latest point is newer than the last one kept."""

    def __init__(self, max_points: int = MAX_POINTS) -> None:
        self._points: dict[str, deque[MetricPoint]] = {}
        self._max_points = max_points
        self._lock = threading.Lock()

    def observe(self, name: str, latest: list[MetricPoint]) -> list[MetricPoint]:
        """Add ``latest`` (a backend's newest point, if any) to ``name``'s history; the history."""
        with self._lock:
            kept = self._points.setdefault(name, deque(maxlen=self._max_points))
            for point in latest:
                if not kept or point.time > kept[-1].time:
                    step = kept[-1].step + 1 if kept else 0
                    kept.append(MetricPoint(step, point.time, point.rank, dict(point.values)))
            return list(kept)
