"""The benchmark harness runs end to end in --smoke mode and writes its JSON."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(autouse=True)
def _forget_benchmark_modules() -> Iterator[None]:
    """The scripts' modules have generic names; do not leave them in sys.modules for others."""
    yield
    for name in ("cases", "harness"):
        sys.modules.pop(name, None)


def test_smoke_run_writes_a_table_and_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import cases
    import harness

    target = tmp_path / "bench.json"
    code = harness.main(cases.core_cases, "smoke",
                        ["--smoke", "--only", "add", "softmax", "--json", str(target)])  # fmt: skip
    assert code == 0
    table = capsys.readouterr().out
    assert "geometric-mean speedup over 4 cases" in table
    results = json.loads(target.read_text())["results"]
    assert [(r["op"], r["dtype"]) for r in results] == [
        ("add", "bfloat16"), ("softmax", "bfloat16"), ("add", "float32"), ("softmax", "float32"),
    ]  # fmt: skip
    assert all(r["matches"] and r["gems_host_us"] > 0 for r in results)
