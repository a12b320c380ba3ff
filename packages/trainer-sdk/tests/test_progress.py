"""update_trainjob_status: to the job's progress file locally, nothing outside a job."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from trainer_sdk import update_trainjob_status
from trainer_sdk.progress import SERVER_URL_ENV, STATUS_FILE_ENV


def test_outside_a_trainjob_it_reports_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(STATUS_FILE_ENV, raising=False)
    monkeypatch.delenv(SERVER_URL_ENV, raising=False)
    assert update_trainjob_status(10) is False


def test_local_job_gets_clamped_progress_eta_and_metrics(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    target = tmp_path / "progress.json"
    monkeypatch.setenv(STATUS_FILE_ENV, str(target))
    assert update_trainjob_status(150, -3, {"loss": 0.25, "epoch": 2}) is True
    written = json.loads(target.read_text())
    assert written["progressPercentage"] == 100
    assert written["estimatedRemainingSeconds"] == 0
    assert written["metrics"] == [
        {"name": "loss", "value": "0.25"},
        {"name": "epoch", "value": "2"},
    ]


def test_bad_progress_names_the_argument(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(STATUS_FILE_ENV, str(tmp_path / "p.json"))
    with pytest.raises(ValueError, match="progress_percent"):
        update_trainjob_status("half")  # type: ignore[arg-type]
