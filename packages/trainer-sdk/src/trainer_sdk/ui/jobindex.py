"""The job list's index: what each row shows, re-read only for jobs that can still change.

A finished (or stopped) job never changes again, so its row's extras (labels, arguments,
latest metrics, when it finished) are read once and kept until the job is deleted (or made
again under its name); the backend's ``list_jobs`` is asked each time (the local backend lists
its folder again only when it changed, and reads again only jobs that can still change).
``version`` moves whenever any row does, so callers keep what they derived from the rows (sorted
selections) until it moves.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from trainer_sdk import constants, types
from trainer_sdk.client import TrainerClient
from trainer_sdk.errors import JobNotFoundError
from trainer_sdk.manifests import trainjobs
from trainer_sdk.status.jobs import finished_at

__all__ = ["SETTLED", "IndexedJob", "JobIndex"]

SETTLED: Final = frozenset(
    {constants.TRAINJOB_COMPLETE, constants.TRAINJOB_FAILED, constants.TRAINJOB_STOPPED}
)


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

    def jobs(self) -> list[IndexedJob]:
        """Every job, oldest first, brought up to date (``version`` moves if anything changed)."""
        rows: dict[str, IndexedJob] = {}
        for job in self.client.list_jobs():
            row = self._rows.get(job.name)
            settled = (
                row is not None
                and row.job.status in SETTLED
                and row.job.creation_timestamp == job.creation_timestamp
            )
            if not settled:
                row = self._read(job)
            if row is not None:
                rows[job.name] = row
        if rows.keys() != self._rows.keys() or any(
            row is not self._rows[name] and row != self._rows[name] for name, row in rows.items()
        ):
            self.version += 1
            self._ordered = sorted(rows.values(), key=lambda row: row.job.creation_timestamp)
        self._rows = rows
        return self._ordered

    def _read(self, job: types.TrainJob) -> IndexedJob | None:
        try:
            manifest = self.client.backend.get_job_manifest(job.name)
            points = self.client.get_job_metrics(job.name)
        except JobNotFoundError:
            return None  # deleted while we looked
        metadata = manifest.get("metadata") or {}
        command = ((manifest.get("spec") or {}).get("trainer") or {}).get("command") or []
        latest: dict[str, tuple[int, float]] = {}
        for point in points:
            for metric, value in point.values.items():
                if value - value == 0 and point.step >= latest.get(metric, (-1, 0.0))[0]:
                    latest[metric] = (point.step, value)
        return IndexedJob(
            job=job,
            finished=finished_at(manifest),
            labels=dict(metadata.get("labels") or {}),
            func_args=trainjobs.function_args(command) or {},
            latest={metric: value for metric, (_, value) in sorted(latest.items())},
        )
