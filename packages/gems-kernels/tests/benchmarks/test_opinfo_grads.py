"""The OpInfo gradient check: served ops found, gradients judged against float64 (issue 39's
``matrix_exp`` report re-checked with it)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest


def test_matrix_exp_gradients_are_no_worse_than_aten(bench: SimpleNamespace) -> None:
    results = list(bench.opinfo_grads.run(["matrix_exp"], samples=2))
    assert [r.name for r in results] == ["matrix_exp"]  # served: its products run on gems
    assert results[0].samples == 2 and not results[0].fails, results[0]


@pytest.mark.parametrize(
    ("gems", "aten", "fails"),
    [(2e-5, 1e-5, True), (2e-5, 2e-5, False), (5e-6, 1e-6, False)],
)
def test_a_mismatch_fails_only_over_the_target_and_over_aten(
    bench: SimpleNamespace, gems: float, aten: float, fails: bool
) -> None:
    assert bench.opinfo_grads.Mismatch(0, 0, gems, aten).fails is fails
