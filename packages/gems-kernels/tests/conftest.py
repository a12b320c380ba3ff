"""Shared setup: Triton's interpreter on machines without a GPU, a private kernel cache."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch

if "TRITON_INTERPRET" not in os.environ and not torch.cuda.is_available():
    # Must happen before gems_kernels (and its @triton.jit functions) is imported.
    os.environ["TRITON_INTERPRET"] = "1"


@pytest.fixture(autouse=True, scope="session")
def _gems_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Generated kernels and tuning results go to a directory private to this test run."""
    path = tmp_path_factory.mktemp("gems_cache")
    previous = os.environ.get("GEMS_CACHE_DIR")
    os.environ["GEMS_CACHE_DIR"] = str(path)
    yield path
    if previous is None:
        os.environ.pop("GEMS_CACHE_DIR", None)
    else:
        os.environ["GEMS_CACHE_DIR"] = previous


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    """A file for ``record_path=``; tests read which overloads reached gems kernels."""
    return tmp_path / "recorded_ops.txt"


@pytest.fixture(autouse=True)
def _seeded() -> None:
    """Every test draws the same random inputs whatever runs before it."""
    torch.manual_seed(0)


@pytest.fixture
def deterministic_mode() -> Iterator[Callable[[bool], None]]:
    """``torch.use_deterministic_algorithms`` for this test only; restored afterwards."""
    previous = torch.are_deterministic_algorithms_enabled()
    yield torch.use_deterministic_algorithms
    torch.use_deterministic_algorithms(previous)
