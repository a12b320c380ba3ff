"""The benchmark scripts' modules, importable from their directory for one test at a time."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
MODULES = ("cases", "compile_check", "competitors", "harness", "run_h200")


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch) -> Iterator[SimpleNamespace]:
    """``cases``, ``compile_check``, ``competitors``, ``harness`` and ``run_h200``, forgotten
    afterwards (their names are generic; they must not stay in sys.modules for other tests)."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import cases
    import competitors
    import compile_check
    import harness
    import run_h200

    yield SimpleNamespace(
        cases=cases,
        compile_check=compile_check,
        competitors=competitors,
        harness=harness,
        run_h200=run_h200,
    )
    for name in MODULES:
        sys.modules.pop(name, None)
