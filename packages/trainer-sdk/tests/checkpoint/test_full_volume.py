"""A checkpointer on a full volume (a real 1 MiB tmpfs, see ``full_volume.py``) still resumes,
fails a save with the error named and nothing left behind, and frees what a killed save left."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).with_name("full_volume.py")


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None,
    reason="mounting a tmpfs in a private mount namespace needs root and unshare(1)",
)
def test_a_full_volume_resumes_fails_saves_cleanly_and_frees_partial_saves(
    tmp_path: Path,
) -> None:
    result = subprocess.run(
        [
            *("unshare", "--mount", "--propagation", "private"),
            *(sys.executable, str(SCRIPT), str(tmp_path / "volume")),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.splitlines()[-1])
    assert report["restored"] == 1
    assert "resumes.jsonl: the restore of step 1 was not recorded" in result.stderr
    assert "the checkpoint of step 2 could not be saved" in report["save_error"]
    assert "the latest complete one is step 1" in report["save_error"]
    free = re.search(r"(\d+) bytes free on its volume", report["save_error"])
    assert free is not None and int(free.group(1)) < 64 * 1024, report["save_error"]
    assert "step-000000002" not in report["after_failed_save"]
    assert report["restored_again"] == 1
    assert report["complete"] == [1, 4]
