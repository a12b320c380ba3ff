"""The host-path benchmark: launches really stubbed, one per call, numbers for every op."""

from __future__ import annotations

from types import SimpleNamespace

import gems_kernels
import torch


def test_launches_are_stubbed_and_counted(bench: SimpleNamespace) -> None:
    x = torch.ones(3)
    with gems_kernels.use_gems(include=["add"]), bench.host_path.launches_stubbed() as launches:
        result = torch.add(x, x)
    assert launches == [1]
    assert result.shape == (3,)  # allocated, never written: the kernel did not run


def test_measure_reports_every_op(bench: SimpleNamespace) -> None:
    rows = bench.host_path.measure(calls=20, repeats=1)
    assert [row["op"] for row in rows] == ["add", "mul", "softmax", "layer_norm", "mm"]
    for row in rows:
        assert row["launches"] == 1
        assert row["floor_us"] > 0 and row["gems_us"] > 0 and row["aten_us"] > 0
