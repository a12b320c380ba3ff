"""The special-value sweep: every unary and binary op within its ULP budget (issue 17).

Every check judges gems against a float64 reference; ATen's error on the host is reported in the
measurement and never asserted (it depends on the CPU: issue 27). The same table prints with
``python -m gems_kernels.sweep``.
"""

from __future__ import annotations

import dataclasses
import math

import gems_kernels
import pytest
import torch
from gems_kernels import sweep

OPS = [pytest.param(op, id=op.name) for op in (*sweep.UNARY, *sweep.BINARY)]
DTYPES = [pytest.param(dtype, id=str(dtype).removeprefix("torch.")) for dtype in sweep.DTYPES]
_BY_NAME = {op.name: op for op in (*sweep.UNARY, *sweep.BINARY)}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", OPS)
def test_special_values_within_budget(op: sweep.SweepOp, dtype: torch.dtype) -> None:
    measured = sweep.measure(op, dtype)
    assert measured.passes, measured


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["float32", "bfloat16"])
@pytest.mark.parametrize("op", OPS)
def test_rare_shapes(op: sweep.SweepOp, dtype: torch.dtype) -> None:
    values = sweep.special_values(dtype)
    for shape_name, x in sweep.shape_variants(values):
        inputs = (x,) if op.arity == 1 else (x, torch.flip(x, [0]) if x.dim() else x * 2)
        native = op.fn(*inputs)
        with gems_kernels.use_gems():
            actual = op.fn(*inputs)
        assert (actual.dtype, actual.shape) == (native.dtype, native.shape), shape_name
        flat = [t.reshape(-1) for t in inputs]
        error = sweep.errors(op, flat, actual.reshape(-1))
        assert error.numel() == 0 or error.max() <= sweep.budget(op, dtype), (shape_name, actual)


def test_ulp_error_counts() -> None:
    reference = torch.tensor(
        [1.0, 1.0, float("nan"), float("inf"), 2.0**-149, 0.0], dtype=torch.float64
    )
    actual = torch.tensor([1.0, 1.0 + 2**-23, float("nan"), float("inf"), 0.0, float("nan")])
    errors = sweep.ulp_error(actual, reference).tolist()
    assert errors[:4] == [0.0, 1.0, 0.0, 0.0]
    assert errors[4] == 1.0  # the smallest float32 subnormal is one ulp from 0
    assert errors[5] == float("inf")


def test_limits_judged_in_float64_not_by_aten() -> None:
    """gelu(-inf) is NaN in the float64 formula and 0 in the limit: both count as exact. gelu(inf)
    is inf in float64, so a NaN there (ATen's float16 gelu on AVX512) is infinitely wrong."""
    op = _BY_NAME["gelu"]
    x = torch.tensor([math.inf, -math.inf, -math.inf], dtype=torch.float16)
    got = torch.tensor([math.nan, math.nan, 0.0], dtype=torch.float16)
    assert sweep.errors(op, [x], got).tolist() == [math.inf, 0.0, 0.0]
    sin = _BY_NAME["sin"]  # no limit: sin(inf) is NaN
    assert sweep.errors(sin, [x[:1]], torch.tensor([0.0], dtype=torch.float16)).item() == math.inf


def test_host_aten_error_is_information_only() -> None:
    """The AVX512 case of issue 27: ATen infinitely wrong, gems exact, the measurement passes
    and names ATen's worst input, not a made-up one for gems."""
    measured = sweep.Measurement(
        op="gelu",
        dtype=torch.float16,
        gems=0.0,
        aten=math.inf,
        budget=2,
        worst_input=None,
        aten_worst_input=(math.inf,),
    )
    assert measured.passes
    assert not dataclasses.replace(measured, gems=3.0).passes


def test_worst_input_is_each_ones_own() -> None:
    """The worst input is reported per side: None where gems is exact everywhere (issue 27 saw
    ``worst_input=(0.0,)``, the argmax of all zeros), the offending input where it is not."""
    x = torch.tensor([0.0, 1.0, math.inf], dtype=torch.float16)
    op = _BY_NAME["gelu"]
    exact = sweep.reference(op, [x]).to(torch.float16)
    assert sweep.errors(op, [x], exact).max() == 0
    measured = sweep.measure(op, torch.float16)
    assert measured.worst_input is None or measured.gems > 0
    assert measured.aten_worst_input is None or measured.aten > 0
