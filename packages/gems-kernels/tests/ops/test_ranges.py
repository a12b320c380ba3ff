"""arange for integer and float ranges, ascending and descending."""

from __future__ import annotations

import pytest
import torch
from gems_kernels import accuracy


@pytest.mark.parametrize(
    ("start", "end", "step", "dtype"),
    [
        pytest.param(0, 10, 1, torch.int64, id="ints"),
        pytest.param(5, -7, -3, torch.int32, id="descending"),
        pytest.param(0.5, 3.0, 0.25, torch.float32, id="floats"),
        pytest.param(0, 1100, 1, torch.bfloat16, id="bf16-rounds-like-aten"),
        pytest.param(3, 3, 1, torch.int64, id="empty"),
    ],
)
def test_arange(start: float, end: float, step: float, dtype: torch.dtype) -> None:
    accuracy.check_op(
        lambda: torch.arange(start, end, step, dtype=dtype), overloads=["arange.start_out"]
    )


def test_zero_step_is_an_error() -> None:
    from gems_kernels import ops

    with pytest.raises(RuntimeError, match="step: must be nonzero"):
        ops.arange_out(0, 3, 0, out=torch.empty(0))
