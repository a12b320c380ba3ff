"""The job list's index: what each row shows, re-read only for jobs that can still change.

Locally a finished job never changes again, so its row is read once (manifest, status, metric
history) and kept until the job is deleted; each request lists the jobs folder and re-reads only
the jobs that are still running. Other backends are asked for the whole list each time (a
cluster's API server is the index there).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from trainer_sdk import constants, trainjobs, types
from trainer_sdk.backends.local.backend import LocalBackend
from trainer_sdk.client import TrainerClient
from trainer_sdk.errors import JobNotFoundError
from trainer_sdk.ui import manifests

__all__ = ["IndexedJob", "JobIndex"]

_SETTLED = (constants.TRAINJOB_COMPLETE, constants.TRAINJOB_FAILED)


@dataclass(frozen=True)
class IndexedJob:
    """One job as the list shows it."""

    job: types.TrainJob
    finished: str | None
    labels: dict[str, str]
    func_args: dict[str, Any]
    latest: dict[str, float]  # each metric's value at its last recorded step


class JobIndex:
    """The jobs of ``client``, oldest first; not thread-safe (the server holds a lock)."""

    def __init__(self, client: TrainerClient) -> None:
        self.client = client
        self._kept: dict[str, IndexedJob] = {}

    def jobs(self) -> list[IndexedJob]:
        backend = self.client.backend
        if not isinstance(backend, LocalBackend):
            return [row for job in self.client.list_jobs() if (row := self._read(job))]
        names = sorted(
            entry.name
            for entry in os.scandir(backend.root)
            if not entry.name.startswith(".") and entry.is_dir()
        )
        present = set(names)
        self._kept = {name: row for name, row in self._kept.items() if name in present}
        rows = []
        for name in names:
            row = self._kept.get(name)
            if row is None:
                try:
                    row = self._read(self.client.get_job(name))
                except (JobNotFoundError, OSError, ValueError):
                    continue  # being created or deleted, or damaged: it hides only itself
                if row is not None and row.job.status in _SETTLED:
                    self._kept[name] = row
            if row is not None:
                rows.append(row)
        return sorted(rows, key=lambda row: row.job.creation_timestamp)

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
