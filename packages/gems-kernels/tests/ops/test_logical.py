"""Logical and bitwise ops: exact results; bitwise ops fall back to ATen for floats."""

from __future__ import annotations

import pytest
import torch
from gems_kernels import accuracy, use_gems


@pytest.mark.parametrize(
    ("shape", "dtype"),
    accuracy.dtype_variants(
        [(s,) for s in accuracy.pointwise_shapes()], [torch.bool, torch.float32, torch.int64]
    ),
)
@pytest.mark.parametrize("name", ["logical_and", "logical_or", "logical_xor"])
def test_logical_binary(name: str, shape: tuple[int, ...], dtype: torch.dtype) -> None:
    a = accuracy.make_tensor(shape, torch.int64, low=-1, high=1).to(dtype)
    b = accuracy.make_tensor(shape, torch.int64, low=-1, high=1).to(dtype)
    accuracy.check_op(getattr(torch, name), a, b, overloads=[name])


@pytest.mark.parametrize("dtype", [torch.bool, torch.float16, torch.int32], ids=str)
def test_logical_not(dtype: torch.dtype) -> None:
    a = accuracy.make_tensor((3, 7), torch.int64, low=-1, high=1).to(dtype)
    accuracy.check_op(torch.logical_not, a, overloads=["logical_not"])


@pytest.mark.parametrize("dtype", [torch.bool, torch.uint8, torch.int32, torch.int64], ids=str)
@pytest.mark.parametrize("name", ["bitwise_and", "bitwise_or", "bitwise_xor"])
def test_bitwise(name: str, dtype: torch.dtype) -> None:
    a = accuracy.make_tensor((4, 9), dtype, low=0, high=100)
    b = accuracy.non_contiguous(accuracy.make_tensor((4, 9), dtype, low=0, high=100))
    accuracy.check_op(getattr(torch, name), a, b, overloads=[f"{name}.Tensor"])


@pytest.mark.parametrize("dtype", [torch.bool, torch.int16, torch.int64], ids=str)
def test_bitwise_not(dtype: torch.dtype) -> None:
    a = accuracy.make_tensor((2, 3, 5), dtype, low=-50, high=50)
    accuracy.check_op(torch.bitwise_not, a, overloads=["bitwise_not"])


def test_bitwise_on_floats_is_left_to_aten() -> None:
    with use_gems(include=["bitwise_and"], record=True) as session, pytest.raises(RuntimeError):
        torch.bitwise_and(torch.ones(2), torch.ones(2))
    assert session.recorder is not None and session.recorder.seen == frozenset()
