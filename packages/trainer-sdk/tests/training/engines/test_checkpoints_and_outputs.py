"""The engine's checkpoints (which one a start resumes from) and the model it writes."""

from __future__ import annotations

from pathlib import Path

import pytest
from trainer_sdk.training.engines import hf_trainer, outputs


def _checkpoint(directory: Path, step: int, committed: bool) -> Path:
    path = directory / f"checkpoint-{step}"
    path.mkdir(parents=True)
    (path / "optimizer.pt").write_text("state")
    if committed:
        (path / hf_trainer.COMMITTED).write_text("complete\n")
    return path


def test_a_start_resumes_from_the_newest_committed_checkpoint(tmp_path: Path) -> None:
    _checkpoint(tmp_path, 5, committed=True)
    ten = _checkpoint(tmp_path, 10, committed=True)
    cut_short = _checkpoint(tmp_path, 15, committed=False)
    assert hf_trainer.resume_checkpoint(tmp_path, is_main=False) == ten
    assert cut_short.exists()  # only the main rank removes it
    assert hf_trainer.resume_checkpoint(tmp_path, is_main=True) == ten
    assert not cut_short.exists()
    assert hf_trainer.resume_checkpoint(tmp_path / "none", is_main=True) is None


def test_checkpoints_go_to_the_checkpoint_volume_when_the_job_has_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(hf_trainer.CHECKPOINT_DIR_ENV, raising=False)
    assert hf_trainer.checkpoint_directory(tmp_path) == tmp_path / "checkpoints"
    monkeypatch.setenv(hf_trainer.CHECKPOINT_DIR_ENV, "/checkpoints/job")
    assert hf_trainer.checkpoint_directory(tmp_path) == Path("/checkpoints/job")


def test_a_model_directory_appears_whole_or_not_at_all(tmp_path: Path) -> None:
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "stale.json").write_text("old")

    def fails(directory: Path) -> None:
        (directory / "config.json").write_text("{}")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        outputs.write_atomically(tmp_path / "model", fails)
    assert [p.name for p in (tmp_path / "model").iterdir()] == ["stale.json"]
    written = outputs.write_atomically(
        tmp_path / "model", lambda d: (d / "config.json").write_text("{}")
    )
    assert [p.name for p in written.iterdir()] == ["config.json"]
