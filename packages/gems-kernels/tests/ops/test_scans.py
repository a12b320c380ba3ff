"""cumsum along each dim, across block boundaries, for floats and integers."""

from __future__ import annotations

import pytest
import torch
from gems_kernels import accuracy

CASES = [((), 0), ((1,), 0), ((37,), 0), ((4, 9), 1), ((4, 9), 0), ((2, 3, 5), -2), ((2, 1500), 1)]


@pytest.mark.parametrize(("shape", "dim", "dtype"), accuracy.dtype_variants(CASES))
def test_cumsum(shape: tuple[int, ...], dim: int, dtype: torch.dtype) -> None:
    x = accuracy.make_tensor(shape, dtype)
    size = shape[dim] if shape else 1
    accuracy.check_op(lambda t: torch.cumsum(t, dim), x, overloads=["cumsum"], reduce_size=size)


@pytest.mark.parametrize("dtype", [torch.int32, torch.bool], ids=str)
def test_integer_cumsum_is_int64(dtype: torch.dtype) -> None:
    x = accuracy.make_tensor((3, 8), dtype, low=-5, high=5)
    accuracy.check_op(lambda t: torch.cumsum(t, 1), x, overloads=["cumsum"])
