"""Comparisons: bool results must match ATen exactly."""

from __future__ import annotations

import pytest
import torch
from gems_kernels import accuracy

NAMES = ("eq", "ne", "lt", "le", "gt", "ge")


@pytest.mark.parametrize(
    ("shape", "dtype"),
    accuracy.dtype_variants(
        [(s,) for s in accuracy.pointwise_shapes()], [torch.float32, torch.float16, torch.int32]
    ),
)
@pytest.mark.parametrize("name", NAMES)
def test_tensor_tensor(name: str, shape: tuple[int, ...], dtype: torch.dtype) -> None:
    # Few distinct values, so that equality is common.
    a = accuracy.make_tensor(shape, dtype, low=-2, high=2).round()
    b = accuracy.make_tensor(shape[1:], dtype, low=-2, high=2).round()
    accuracy.check_op(getattr(torch, name), a, b, overloads=[f"{name}.Tensor"])


@pytest.mark.parametrize("name", NAMES)
def test_tensor_scalar_strided(name: str) -> None:
    a = accuracy.non_contiguous(accuracy.make_tensor((5, 6), torch.float32).round())
    accuracy.check_op(lambda x: getattr(torch, name)(x, 1.0), a, overloads=[f"{name}.Scalar"])
