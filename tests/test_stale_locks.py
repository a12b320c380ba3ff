"""Only build locks old enough to be left by a killed build are removed."""

from __future__ import annotations

import os
from pathlib import Path

from build_locks import remove_stale_build_locks


def test_only_old_locks_are_removed(tmp_path: Path) -> None:
    old, fresh = (
        tmp_path / "py311_cpu" / "old_op" / "lock",
        tmp_path / "py311_cpu" / "new_op" / "lock",
    )
    for lock, age in ((old, 3600), (fresh, 60)):
        lock.parent.mkdir(parents=True)
        lock.touch()
        os.utime(lock, (1_000_000 - age, 1_000_000 - age))
    assert remove_stale_build_locks(tmp_path, now=1_000_000, max_age=1800) == [old]
    assert not old.exists() and fresh.exists()


def test_a_missing_root_is_fine(tmp_path: Path) -> None:
    assert remove_stale_build_locks(tmp_path / "absent", now=0, max_age=1) == []
