"""Which checkpoints count as complete, pruning, and the resume log (no torch.distributed)."""

from __future__ import annotations

from pathlib import Path

import pytest
from trainer_sdk.checkpoint import _layout


def committed(root: Path, step: int) -> Path:
    path = _layout.step_dir(root, step)
    path.mkdir(parents=True)
    _layout.commit(path, step, world_size=2, attempt=1)
    return path


def test_latest_skips_checkpoints_without_a_commit_marker(tmp_path: Path) -> None:
    committed(tmp_path, 10)
    _layout.step_dir(tmp_path, 20).mkdir()  # a save cut short
    found = _layout.latest(tmp_path)
    assert found is not None
    assert (found.step, found.world_size, found.attempt) == (10, 2, 1)


def test_latest_orders_by_step_not_by_name(tmp_path: Path) -> None:
    for step in (9, 100, 20):
        committed(tmp_path, step)
    assert [c.step for c in _layout.checkpoints(tmp_path)] == [9, 20, 100]
    found = _layout.latest(tmp_path)
    assert found is not None and found.step == 100


def test_latest_reads_the_env_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(_layout.CHECKPOINT_DIR_ENV, raising=False)
    assert _layout.latest() is None
    committed(tmp_path, 3)
    monkeypatch.setenv(_layout.CHECKPOINT_DIR_ENV, str(tmp_path))
    found = _layout.latest()
    assert found is not None and found.step == 3


def test_a_missing_directory_has_no_checkpoints(tmp_path: Path) -> None:
    assert _layout.checkpoints(tmp_path / "absent") == []


@pytest.mark.parametrize(
    ("keep_last", "kept"), [(1, [40]), (2, [30, 40]), (3, [20, 30, 40]), (9, [10, 20, 30, 40])]
)
def test_prune_keeps_the_newest_and_drops_partial_saves(
    tmp_path: Path, keep_last: int, kept: list[int]
) -> None:
    for step in (10, 20, 30, 40):
        committed(tmp_path, step)
    _layout.step_dir(tmp_path, 50).mkdir()
    (tmp_path / "not-a-checkpoint").mkdir()
    _layout.prune(tmp_path, keep_last)
    assert [c.step for c in _layout.checkpoints(tmp_path)] == kept
    assert not _layout.step_dir(tmp_path, 50).exists()
    assert (tmp_path / "not-a-checkpoint").is_dir()


def test_prune_spares_the_save_in_flight(tmp_path: Path) -> None:
    committed(tmp_path, 10)
    in_flight = _layout.step_dir(tmp_path, 20)
    in_flight.mkdir()
    _layout.prune(tmp_path, None, in_flight=in_flight)
    assert in_flight.is_dir()


def test_commit_leaves_no_temporary_file(tmp_path: Path) -> None:
    path = committed(tmp_path, 1)
    assert sorted(p.name for p in path.iterdir()) == [_layout.COMMIT_MARKER]


def test_resume_log_skips_a_torn_last_line(tmp_path: Path) -> None:
    _layout.record_resume(tmp_path, 40, attempt=1)
    _layout.record_resume(tmp_path, 80, attempt=2)
    with open(tmp_path / _layout.RESUMES_FILE, "a") as handle:
        handle.write('{"step": 12')
    assert [(r.step, r.attempt) for r in _layout.read_resumes(tmp_path)] == [(40, 1), (80, 2)]
    assert _layout.read_resumes(tmp_path / "absent") == []
