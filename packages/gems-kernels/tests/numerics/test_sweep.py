"""The special-value sweep: every unary and binary op within its ULP budget (issue 17).

The same table prints with ``python -m gems_kernels.sweep``.
"""

from __future__ import annotations

import gems_kernels
import pytest
import torch
from gems_kernels import sweep

OPS = [pytest.param(op, id=op.name) for op in (*sweep.UNARY, *sweep.BINARY)]
DTYPES = [pytest.param(dtype, id=str(dtype).removeprefix("torch.")) for dtype in sweep.DTYPES]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", OPS)
def test_special_values_within_budget(op: sweep.SweepOp, dtype: torch.dtype) -> None:
    measured = sweep.measure(op, dtype)
    assert measured.gems <= measured.budget, measured
    if (op.name, dtype) not in sweep.ATEN_EXCEPTIONS:
        assert measured.aten <= measured.budget, measured  # the budget is one ATen meets


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
        reference = native.to(torch.float64)
        error = sweep.ulp_error(actual, reference)
        assert error.numel() == 0 or error.max() <= 2 * sweep.budget(op, dtype), (
            shape_name,
            actual,
            native,
        )


def test_ulp_error_counts() -> None:
    reference = torch.tensor(
        [1.0, 1.0, float("nan"), float("inf"), 2.0**-149, 0.0], dtype=torch.float64
    )
    actual = torch.tensor([1.0, 1.0 + 2**-23, float("nan"), float("inf"), 0.0, float("nan")])
    errors = sweep.ulp_error(actual, reference).tolist()
    assert errors[:4] == [0.0, 1.0, 0.0, 0.0]
    assert errors[4] == 1.0  # the smallest float32 subnormal is one ulp from 0
    assert errors[5] == float("inf")
