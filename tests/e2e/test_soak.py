"""A small soak (tools/soak.py): 12 local jobs, a polled UI, 2 cache readers, kill -9, checked."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]
SOAK = Path(__file__).resolve().parents[2] / "tools" / "soak.py"


def test_a_small_soak_finds_every_job_truthful_and_nothing_lost_or_left(tmp_path: Path) -> None:
    root = tmp_path / "soak"
    result = subprocess.run(
        [sys.executable, str(SOAK), "--jobs", "12", "--readers", "2", "--root", str(root)],
        capture_output=True,
        text=True,
        timeout=840,
        check=False,
    )
    report = result.stdout + result.stderr[-3000:]
    assert result.returncode == 0, report
    assert "clean 6, fails 2, kill-rank 2, kill-supervisor 2" in result.stdout, report
    assert (
        "clean->Complete 6, fails->Failed 2, kill-rank->Failed 2, kill-supervisor->Failed 2"
        in result.stdout
    ), report
    assert re.search(r"^left running +0$", result.stdout, re.MULTILINE), report
    assert "VIOLATION" not in result.stdout, report
