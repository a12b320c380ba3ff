"""A cluster job's metric history as the UI saw it, kept in SQLite: each new ``trainerStatus``
is one point.

A cluster keeps only the latest values (in ``status.trainerStatus``, at most one update per 5 s
per job from the SDK); the UI server samples them while it runs (``sample``, every few seconds,
and whenever a page asks) into this store, so its charts start when it started watching and,
with a file (``--history``; on a PVC in the cluster), survive a restart of the UI. Locally the
per-rank metric files the job writes stay the source of truth and nothing comes here (the
training thread's ``log_metrics`` cost is untouched).

The store is the standard library's ``sqlite3`` in WAL mode with one connection, the writer,
shared behind a lock: other processes may read the file while it writes. Bounded: ``MAX_POINTS``
per job (oldest dropped first) and points older than the retention are deleted.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Final

from trainer_sdk.training.metrics import MetricPoint

__all__ = ["DEFAULT_RETENTION_DAYS", "MAX_POINTS", "ObservedHistory"]

MAX_POINTS: Final = 10_000
DEFAULT_RETENTION_DAYS: Final = 30.0
_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS points (
    job TEXT NOT NULL,
    created TEXT NOT NULL,
    step INTEGER NOT NULL,
    time REAL NOT NULL,
    rank INTEGER NOT NULL,
    metrics TEXT NOT NULL,
    PRIMARY KEY (job, created, step)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS points_by_time ON points (time);
"""


class ObservedHistory:
    """Points per job (its name and creation time: a job made again under the same name starts
    a new history), in ``path`` (None: in memory, gone with the server)."""

    def __init__(
        self,
        path: Path | None = None,
        retention_days: float = DEFAULT_RETENTION_DAYS,
        max_points: int = MAX_POINTS,
    ) -> None:
        if retention_days <= 0:
            raise ValueError(f"retention: expected a positive number of days, got {retention_days}")
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(
            ":memory:" if path is None else str(path), check_same_thread=False
        )
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")  # WAL keeps it consistent on a crash
        self._db.executescript(_SCHEMA)
        self._retention_seconds = retention_days * 86_400
        self._max_points = max_points
        self._lock = threading.Lock()
        self.prune()

    def observe(self, name: str, created: str, latest: list[MetricPoint]) -> list[MetricPoint]:
        """Add ``latest`` (a backend's newest point, if any) to the job's history; the history."""
        key = (name, created)
        with self._lock, self._db:
            last = self._db.execute(
                "SELECT step, time FROM points WHERE job = ? AND created = ?"
                " ORDER BY step DESC LIMIT 1",
                key,
            ).fetchone()
            for point in latest:
                if last is None or point.time > last[1]:
                    last = (last[0] + 1 if last else 0, point.time)
                    self._db.execute(
                        "INSERT INTO points VALUES (?, ?, ?, ?, ?, ?)",
                        (*key, last[0], point.time, point.rank, json.dumps(point.values)),
                    )
                    self._db.execute(
                        "DELETE FROM points WHERE job = ? AND created = ? AND step <= ?",
                        (*key, last[0] - self._max_points),
                    )
            rows = self._db.execute(
                "SELECT step, time, rank, metrics FROM points WHERE job = ? AND created = ?"
                " ORDER BY step",
                key,
            ).fetchall()
        return [MetricPoint(step, at, rank, json.loads(values)) for step, at, rank, values in rows]

    def prune(self) -> None:
        """Delete the points older than the retention."""
        with self._lock, self._db:
            cutoff = time.time() - self._retention_seconds
            self._db.execute("DELETE FROM points WHERE time < ?", (cutoff,))

    def close(self) -> None:
        with self._lock:
            self._db.close()
