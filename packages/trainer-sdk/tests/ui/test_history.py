"""The kept metric history of cluster jobs (issue 24, "history is lost in a cluster"): SQLite in
WAL mode, bounded, with a retention; it survives a restart of the store and of the UI."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest
from trainer_sdk.training.metrics import MetricPoint
from trainer_sdk.ui.observed import ObservedHistory

CREATED = "2026-01-01T00:00:00+00:00"


def point(at: float, loss: float) -> list[MetricPoint]:
    """A cluster's latest report: one point, step 0, rank 0."""
    return [MetricPoint(0, at, 0, {"loss": loss})]


def test_points_are_kept_in_the_file_across_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite3"
    now = time.time()
    store = ObservedHistory(path)
    store.observe("job", CREATED, point(now, 0.5))
    store.observe("job", CREATED, point(now, 0.5))  # the same report again: no new point
    store.observe("job", CREATED, point(now + 5, 0.25))
    store.close()
    reopened = ObservedHistory(path)
    kept = reopened.observe("job", CREATED, [])
    reopened.close()
    assert [(p.step, p.values["loss"]) for p in kept] == [(0, 0.5), (1, 0.25)]
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_a_job_made_again_under_its_name_starts_a_new_history(tmp_path: Path) -> None:
    store = ObservedHistory(tmp_path / "history.sqlite3")
    store.observe("job", CREATED, point(time.time(), 1.0))
    again = store.observe("job", "2026-02-01T00:00:00+00:00", point(time.time(), 2.0))
    store.close()
    assert [p.values["loss"] for p in again] == [2.0]


def test_the_history_is_bounded_and_old_points_expire(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite3"
    store = ObservedHistory(path, max_points=3)
    now = time.time()
    for index in range(5):
        kept = store.observe("job", CREATED, point(now + index, float(index)))
    assert [p.values["loss"] for p in kept] == [2.0, 3.0, 4.0]
    store.observe("old", CREATED, point(now - 3 * 86_400, 9.0))
    store.close()
    pruned = ObservedHistory(path, retention_days=2)  # pruned when opened
    assert pruned.observe("old", CREATED, []) == []
    assert len(pruned.observe("job", CREATED, [])) == 3
    pruned.close()


def test_a_retention_that_is_not_positive_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="retention: expected a positive number of days"):
        ObservedHistory(tmp_path / "history.sqlite3", retention_days=0)
