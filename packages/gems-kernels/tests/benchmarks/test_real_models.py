"""The real-model benchmark's verdict over seeds (the models themselves run in the benchmark,
minutes under the interpreter: not here)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest


def _row(bench: SimpleNamespace, model: str, seed: int, logits: tuple[float, float],
         grads: tuple[float, float] = (1e-3, 1e-3)) -> Any:  # fmt: skip
    return bench.real_models.ModelError(
        model=model, dtype="bfloat16", seed=seed, gems_logits=logits[0], aten_logits=logits[1],
        gems_grads=grads[0], aten_grads=grads[1], gems_ops=3, native_ops=(), seconds=1.0,
    )  # fmt: skip


def test_summary_takes_the_median_of_the_paired_ratios(bench: SimpleNamespace) -> None:
    """Seeds at 0.5x, 1.0x and 3.0x: the verdict's figure is their median, 1.0x (a mean of the
    ratios would be 1.5x); each side's error column is that side's own median."""
    rows = [
        _row(bench, "vit-hf", 0, logits=(2e-3, 4e-3), grads=(3e-3, 1e-3)),
        _row(bench, "vit-hf", 1, logits=(4e-3, 4e-3), grads=(3e-3, 1e-3)),
        _row(bench, "vit-hf", 2, logits=(6e-3, 2e-3), grads=(3e-3, 1e-3)),
    ]
    (summary,) = bench.real_models.summarize(rows)
    assert (summary.model, summary.seeds) == ("vit-hf", 3)
    assert (summary.gems_logits, summary.aten_logits) == (4e-3, 4e-3)
    assert summary.logits_ratios == pytest.approx((1.0, 0.5, 3.0))
    assert summary.grads_ratios == pytest.approx((3.0, 3.0, 3.0))
    assert summary.verdict(1.1) == "not met"


def test_summaries_follow_the_order_of_the_rows(bench: SimpleNamespace) -> None:
    rows = [_row(bench, name, seed, (1e-3, 1e-3)) for name in ("vit", "bert") for seed in (0, 1)]
    assert [s.model for s in bench.real_models.summarize(rows)] == ["vit", "bert"]


def test_exact_sides_count_as_a_ratio_of_one(bench: SimpleNamespace) -> None:
    (summary,) = bench.real_models.summarize([_row(bench, "vit", 0, (0.0, 0.0), (0.0, 0.0))])
    assert summary.logits_ratios == summary.grads_ratios == (1.0, 1.0, 1.0)
    assert summary.verdict(1.1) == "met"


@pytest.mark.parametrize(
    ("logits", "verdict", "status"),
    [
        pytest.param([1.6, 1.0, 0.9], "met", 0, id="one-seed-over-meets-it"),
        pytest.param([1.2, 1.2, 0.9], "within noise", 0, id="median-over-seed-under"),
        pytest.param([1.2, 1.3, 1.15], "not met", 1, id="every-seed-over-misses-it"),
    ],
)
def test_verdict_is_on_the_median_and_its_interval(
    bench: SimpleNamespace,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    logits: list[float],
    verdict: str,
    status: int,
) -> None:
    """Per-seed logits ratios against the 1.1x target: a median under it meets it; a median
    over it whose interval (3 seeds: the whole range) reaches under it is noise; a gap at every
    seed misses it, and only that fails the run."""
    by_seed = {seed: (ratio * 1e-3, 1e-3) for seed, ratio in enumerate(logits)}
    monkeypatch.setattr(
        bench.real_models,
        "compare",
        lambda name, dtype, seed: _row(bench, name, seed, by_seed[seed]),
    )
    assert bench.real_models.main(["--models", "vit-hf", "--seeds", "0", "1", "2"]) == status
    out = capsys.readouterr().out
    (summary_row,) = [
        line for line in out.splitlines() if line.startswith("| vit-hf | bfloat16 | 3 |")
    ]
    assert summary_row.endswith(f"| {verdict} |")
    assert (f"1.1x target {verdict}: vit-hf" in out) == (verdict != "met")
    assert "| vit-hf | bfloat16 | 1 | 3 | none |" in out  # the per-seed rows are printed


@pytest.mark.parametrize(
    ("count", "ends"),
    [
        pytest.param(3, (1, 3), id="too-few-for-90-percent-whole-range"),
        pytest.param(5, (1, 5), id="5-whole-range-94-percent"),
        pytest.param(10, (2, 9), id="10-second-to-ninth-98-percent"),
        pytest.param(20, (6, 15), id="20-sixth-to-fifteenth-96-percent"),
    ],
)
def test_median_interval_is_the_sign_tests(
    bench: SimpleNamespace, count: int, ends: tuple[int, int]
) -> None:
    values = [float(v) for v in range(count, 0, -1)]  # any order
    assert bench.real_models.median_interval(values) == (float(ends[0]), float(ends[1]))
