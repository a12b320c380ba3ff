"""tools/engine_env.py: an engine's environment installs its extra's pins, sees the workspace, and
is made again when it does not."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import engine_env
import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_the_requirements_are_the_sdk_extras_pins() -> None:
    assert engine_env.extra_requirements("torchtune") == [
        "torch>=2.4",
        "torchtune==0.6.1",
        "torchao==0.15.0",
    ]
    with pytest.raises(ValueError, match=r"extra 'nope': trainer-sdk has \[.*'torchtune'"):
        engine_env.extra_requirements("nope")


def test_an_environment_without_theworkspace_line_is_not_current(tmp_path: Path) -> None:
    assert not engine_env.is_current(tmp_path / "missing", "tune")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    (venv / "bin" / "tune").write_text("#!/bin/sh\n")
    assert not engine_env.is_current(venv, "tune")  # no line: it sees no workspace
    site_packages = engine_env.site_packages(venv / "bin" / "python")
    (site_packages / "_workspace.pth").write_text(engine_env.workspace_line())
    assert engine_env.is_current(venv, "tune")
    run = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import trainer_sdk; print(trainer_sdk.__file__)"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert run.stdout.startswith(str(ROOT / "packages" / "trainer-sdk"))
