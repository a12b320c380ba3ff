"""The fused loss benchmark runs both variants, prints the table and records it (issue 27)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest


def test_fused_loss_table_and_json(
    bench: SimpleNamespace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    monkeypatch.setenv("OUT", str(tmp_path))
    argv = ["--tokens", "64", "--vocab", "300", "--hidden", "16", "--chunk", "128"]
    assert bench.fused_loss.main(argv) == 0
    printed = capsys.readouterr().out
    assert "64 tokens x 300 vocab x 16 hidden, float32" in printed
    assert "agree within 1e-05" in printed
    summary = json.loads((tmp_path / "gems_fused_loss.json").read_text())
    assert summary["agrees"] and set(summary["peak_bytes"]) == {"aten", "fused"}
    assert all(error <= 1e-5 for error in summary["relative_errors"].values())
