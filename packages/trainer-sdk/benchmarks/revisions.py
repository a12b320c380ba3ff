"""The trainer-sdk sources of a git revision, for benchmarks that run it beside this tree."""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path

__all__ = ["SOURCES", "export"]

SOURCES = "packages/trainer-sdk/src"
_REPOSITORY = Path(__file__).resolve().parents[3]


def export(revision: str, into: Path) -> Path:
    """The trainer-sdk sources of ``revision`` under ``into`` (its ``trainer_sdk`` is
    importable with the returned folder first on ``PYTHONPATH``)."""
    archive = subprocess.run(
        ["git", "archive", "--format=tar", revision, SOURCES],
        check=True,
        capture_output=True,
        cwd=_REPOSITORY,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into / SOURCES
