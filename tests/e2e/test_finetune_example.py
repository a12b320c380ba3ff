"""The guide's example (``hatch run finetune``, i.e. ``examples/finetune_llm.py``) as a new user
runs it: a tiny model built here fine-tuned with LoRA on two local nodes, the loss falling, the
merged model answering."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
REPO_ROOT = Path(__file__).resolve().parents[2]


def test_the_fine_tuning_guide_runs(tmp_path: Path) -> None:
    environ = {**os.environ, "TRAINER_SDK_ROOT": str(tmp_path / "jobs")}
    result = subprocess.run(
        [sys.executable, REPO_ROOT / "examples" / "finetune_llm.py", "--workdir", tmp_path / "w"],
        cwd=tmp_path,
        env=environ,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    losses = [
        float(loss) for loss in re.findall(r"^step +\d+  loss ([\d.]+)$", result.stdout, re.M)
    ]
    assert len(losses) == 30 and losses[-1] < losses[0]
    assert re.search(r"TrainJob \w+: Complete; the model is in \S+/output$", result.stdout, re.M)
    assert len(re.findall(r"^what is the color of the \w+\? ", result.stdout, re.M)) == 5
