"""Every console command and ``python -m`` entry point answers ``--version`` with the release."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import distribution
from pathlib import Path

import pytest

VERSION = (Path(__file__).resolve().parents[1] / "VERSION").read_text().strip()
COMMANDS = {  # console command -> its distribution
    "trainer": "trainer-sdk",
    "trainer-controller": "trainer-controller",
    "data-cache": "trainer-data-cache",
    "mpi-launch": "mpi-runtime",
    "mpi-worker": "mpi-runtime",
}


def test_every_console_command_is_listed() -> None:
    declared = {
        entry.name: name
        for name in set(COMMANDS.values())
        for entry in distribution(name).entry_points
        if entry.group == "console_scripts"
    }
    assert declared == COMMANDS


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        *[pytest.param([command], command, id=command) for command in COMMANDS],
        pytest.param(["-m", "trainer_sdk"], "trainer", id="python-m-trainer_sdk"),
        pytest.param(["-m", "trainer_controller"], "trainer-controller", id="python-m-controller"),
        pytest.param(["-m", "trainer_data_cache"], "data-cache", id="python-m-data-cache"),
        pytest.param(["-m", "mpi_runtime", "launch"], "mpi-launch", id="python-m-mpi-launch"),
        pytest.param(["-m", "mpi_runtime", "worker"], "mpi-worker", id="python-m-mpi-worker"),
    ],
)
def test_version(argv: list[str], expected: str) -> None:
    # A console command is the script pip installed beside this interpreter.
    command = (
        [sys.executable, *argv] if argv[0] == "-m" else [str(Path(sys.executable).parent / argv[0])]
    )
    result = subprocess.run(
        [*command, "--version"], capture_output=True, text=True, timeout=120, check=False
    )
    assert (result.returncode, result.stdout) == (0, f"{expected} {VERSION}\n"), result.stderr
