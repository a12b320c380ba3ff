"""The job list's index: what each row shows, re-read only for jobs that can still change.

Locally a finished (or stopped) job never changes again, so its row is read once (manifest,
status, metric history) and kept until the job is deleted; the jobs folder is listed again only
when its modification time moved (or moved less than ``RACY_SECONDS`` ago, as a coarse file
clock could hide a second change within one tick), and only jobs that can still change are
re-read. ``version`` moves whenever any row does, so callers keep what they derived from the rows
(sorted selections) until it moves. Other backends are asked for the whole list each time (a
cluster's API server is the index there).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from trainer_sdk import constants, types
from trainer_sdk.backends.local.backend import LocalBackend
from trainer_sdk.client import TrainerClient
from trainer_sdk.errors import JobNotFoundError
from trainer_sdk.manifests import trainjobs
from trainer_sdk.ui import manifests

__all__ = ["RACY_SECONDS", "SETTLED", "IndexedJob", "JobIndex"]

SETTLED: Final = frozenset(
    {constants.TRAINJOB_COMPLETE, constants.TRAINJOB_FAILED, constants.TRAINJOB_STOPPED}
)
RACY_SECONDS: Final = 2.0


@dataclass(frozen=True)
class IndexedJob:
    """One job as the list shows it."""

    job: types.TrainJob
    finished: str | None
    labels: dict[str, str]
    func_args: dict[str, Any]
    latest: dict[str, float]  # each metric's value at its last recorded step


class JobIndex:
    """The jobs of ``client``, oldest first; not thread-safe (the caller holds a lock)."""

    def __init__(self, client: TrainerClient) -> None:
        self.client = client
        self.version = 0
        self._rows: dict[str, IndexedJob] = {}
        self._ordered: list[IndexedJob] = []
        self._listing: tuple[int, list[str]] | None = None  # the folder's mtime, its jobs
        self._unsettled = True  # some job may still change (or could not be read yet)

    def jobs(self) -> list[IndexedJob]:
        """Every job, oldest first, brought up to date (``version`` moves if anything changed)."""
        backend = self.client.backend
        if isinstance(backend, LocalBackend):
            rows = self._local(backend.root)
        else:
            rows = {job.name: row for job in self.client.list_jobs() if (row := self._read(job))}
        if rows is not self._rows and (
            rows.keys() != self._rows.keys()
            or any(
                row is not self._rows[name] and row != self._rows[name]
                for name, row in rows.items()
            )
        ):
            self.version += 1
            self._ordered = sorted(rows.values(), key=lambda row: row.job.creation_timestamp)
        self._rows = rows
        return self._ordered

    def _names(self, root: Path) -> list[str]:
        stamp = os.stat(root).st_mtime_ns
        settled = time.time_ns() - stamp > RACY_SECONDS * 1e9
        if self._listing is None or self._listing[0] != stamp or not settled:
            names = [
                entry.name
                for entry in os.scandir(root)
                if not entry.name.startswith(".") and entry.is_dir()
            ]
            self._listing = (stamp, names)
        return self._listing[1]

    def _local(self, root: Path) -> dict[str, IndexedJob]:
        """The rows, re-read where they may change; the same dict when nothing could have."""
        listed = self._listing
        names = self._names(root)
        if listed is self._listing and not self._unsettled:
            return self._rows  # the same listing, every job in it settled: nothing to read
        rows: dict[str, IndexedJob] = {}
        self._unsettled = False
        for name in names:
            row = self._rows.get(name)
            if row is None or row.job.status not in SETTLED:
                try:
                    row = self._read(self.client.get_job(name))
                except (JobNotFoundError, OSError, ValueError):
                    row = None  # being created or deleted, or damaged: it hides only itself
            if row is not None:
                rows[name] = row
            self._unsettled |= row is None or row.job.status not in SETTLED
        return rows

    def _read(self, job: types.TrainJob) -> IndexedJob | None:
        try:
            manifest = manifests.trainjob_manifest(self.client.backend, job.name)
        except JobNotFoundError:
            return None  # deleted while we looked
        metadata = manifest.get("metadata") or {}
        command = ((manifest.get("spec") or {}).get("trainer") or {}).get("command") or []
        latest: dict[str, tuple[int, float]] = {}
        for point in self.client.get_job_metrics(job.name):
            for metric, value in point.values.items():
                if value - value == 0 and point.step >= latest.get(metric, (-1, 0.0))[0]:
                    latest[metric] = (point.step, value)
        return IndexedJob(
            job=job,
            finished=manifests.finished_at(manifest),
            labels=dict(metadata.get("labels") or {}),
            func_args=trainjobs.function_args(command) or {},
            latest={metric: value for metric, (_, value) in sorted(latest.items())},
        )
