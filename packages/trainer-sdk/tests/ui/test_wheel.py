"""The wheel carries the UI's page, script, styles and the vendored chart library (no build step,
nothing fetched at run time)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2]
ASSETS = sorted(
    str(path.relative_to(PACKAGE / "src"))
    for path in (PACKAGE / "src" / "trainer_sdk" / "ui" / "static").rglob("*")
    if path.is_file()
)


@pytest.mark.e2e
def test_the_wheel_ships_every_ui_asset(tmp_path: Path) -> None:
    build = [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(tmp_path)]
    result = subprocess.run(
        [*build, str(PACKAGE)], capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stderr
    [wheel] = tmp_path.glob("trainer_sdk-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "trainer_sdk/ui/static/vendor/uPlot.iife.min.js" in ASSETS
    assert "trainer_sdk/ui/static/vendor/uPlot.LICENSE" in ASSETS
    assert [asset for asset in ASSETS if asset not in names] == []
