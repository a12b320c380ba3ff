"""The benchmark scripts' modules, importable from their directory for one test at a time."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
MODULES = (
    "cases",
    "compile_check",
    "competitors",
    "end_to_end",
    "flaggems_diff",
    "fused_loss",
    "harness",
    "host_path",
    "model_zoo",
    "op_errors",
    "opinfo_grads",
    "readme_tables",
    "real_models",
    "run_h200",
    "vision_cases",
    "vision_models",
    "zoo",
    "zoo_steps",
)


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch) -> Iterator[SimpleNamespace]:
    """The benchmark modules (``cases``, ``compile_check``, ``competitors``, ``end_to_end``,
    ``flaggems_diff``, ``fused_loss``, ``harness``, ``host_path``, ``model_zoo``, ``op_errors``,
    ``opinfo_grads``, ``readme_tables``, ``real_models``, ``run_h200``, ``zoo``, ``zoo_steps``),
    forgotten afterwards (their names are generic; they must not stay in sys.modules for other
    tests)."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import cases
    import competitors
    import compile_check
    import end_to_end
    import flaggems_diff
    import fused_loss
    import harness
    import host_path
    import model_zoo
    import op_errors
    import opinfo_grads
    import readme_tables
    import real_models
    import run_h200
    import zoo
    import zoo_steps

    yield SimpleNamespace(
        cases=cases,
        compile_check=compile_check,
        competitors=competitors,
        end_to_end=end_to_end,
        flaggems_diff=flaggems_diff,
        fused_loss=fused_loss,
        harness=harness,
        host_path=host_path,
        model_zoo=model_zoo,
        op_errors=op_errors,
        opinfo_grads=opinfo_grads,
        readme_tables=readme_tables,
        real_models=real_models,
        run_h200=run_h200,
        zoo=zoo,
        zoo_steps=zoo_steps,
    )
    for name in MODULES:
        sys.modules.pop(name, None)
