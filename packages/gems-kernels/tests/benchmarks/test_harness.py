"""The benchmark harness runs end to end in --smoke mode and writes its JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


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
