"""Counters a node reports: rows and bytes served, streams, refusals."""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass

__all__ = ["Metrics"]


@dataclass
class _Counts:
    rows_served: int = 0
    bytes_served: int = 0
    streams_started: int = 0
    streams_refused: int = 0


class Metrics:
    """Thread-safe counters; ``snapshot`` returns a plain dict."""

    def __init__(self) -> None:
        self._counts = _Counts()
        self._lock = threading.Lock()

    def served(self, rows: int, nbytes: int) -> None:
        with self._lock:
            self._counts.rows_served += rows
            self._counts.bytes_served += nbytes

    def stream_started(self) -> None:
        with self._lock:
            self._counts.streams_started += 1

    def stream_refused(self) -> None:
        with self._lock:
            self._counts.streams_refused += 1

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return asdict(self._counts)
