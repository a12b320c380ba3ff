"""``trainer ui`` needs the ``ui`` extra (aiohttp): without it the command names the install
command and exits 2; the rest of the CLI does not need it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

BLOCK_AIOHTTP = textwrap.dedent(
    """
    import importlib.abc, sys
    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] == "aiohttp":
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    sys.meta_path.insert(0, Block())
    from trainer_sdk.cli import main
    main()
    """
)


def trainer_without_aiohttp(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", BLOCK_AIOHTTP, *arguments],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_trainer_ui_without_aiohttp_names_the_extra(tmp_path: Path) -> None:
    result = trainer_without_aiohttp("--backend", "local", "--root", str(tmp_path), "ui")
    assert result.returncode == 2, result.stderr
    assert "pip install 'trainer-sdk[ui]'" in result.stderr


def test_other_commands_run_without_aiohttp(tmp_path: Path) -> None:
    result = trainer_without_aiohttp("--backend", "local", "--root", str(tmp_path), "list")
    assert result.returncode == 0, result.stderr
