"""Repository-wide test setup: no test run waits on, or breaks, another run's extension builds."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from torch_extensions import publish_built_ops, seed_private_root, shared_root


@pytest.fixture(scope="session", autouse=True)
def _private_torch_extensions() -> Iterator[Path]:
    """This run builds torch extensions in a directory of its own (processes it starts inherit
    ``TORCH_EXTENSIONS_DIR``), seeded with the ops already built; new ones are published after."""
    shared = shared_root()
    private = Path(tempfile.mkdtemp(prefix="torch-extensions-"))
    seed_private_root(shared, private)
    previous = os.environ.get("TORCH_EXTENSIONS_DIR")
    os.environ["TORCH_EXTENSIONS_DIR"] = str(private)
    try:
        yield private
    finally:
        if previous is None:
            os.environ.pop("TORCH_EXTENSIONS_DIR", None)
        else:
            os.environ["TORCH_EXTENSIONS_DIR"] = previous
        publish_built_ops(private, shared)
        shutil.rmtree(private, ignore_errors=True)
