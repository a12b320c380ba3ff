"""Shared fixtures: where the upstream reference data lives."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="session")
def upstream_dir() -> Path:
    """``TRAINER_UPSTREAM_DIR``, else ``<repo>/../shared/upstream``; skips when absent."""
    configured = os.environ.get("TRAINER_UPSTREAM_DIR")
    path = Path(configured) if configured else REPO_ROOT / ".." / "shared" / "upstream"
    if not (path / "kubeflow-trainer").is_dir():
        pytest.skip(
            f"upstream reference data not found at {path}: set TRAINER_UPSTREAM_DIR to the "
            "folder holding kubeflow-trainer/ and jobset/"
        )
    return path
