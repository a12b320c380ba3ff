"""where, clamp and masked_fill against ATen, with broadcasting and scalar operands."""

from __future__ import annotations

import pytest
import torch
from gems_kernels import accuracy


@pytest.mark.parametrize(("shape", "dtype", "layout"), accuracy.pointwise_variants())
def test_where(shape: tuple[int, ...], dtype: torch.dtype, layout: str) -> None:
    condition = accuracy.make_tensor(shape, torch.bool)
    x = accuracy.arrange(accuracy.make_tensor(shape, dtype), layout)
    y = accuracy.make_tensor(shape[1:], torch.float32)
    accuracy.check_op(torch.where, condition, x, y, overloads=["where.self"])


@pytest.mark.parametrize(("shape", "dtype", "layout"), accuracy.pointwise_variants())
@pytest.mark.parametrize(
    "bounds", [(-1.0, 1.0), (None, 0.5), (-0.5, None)], ids=["both", "max", "min"]
)
def test_clamp(
    bounds: tuple[float | None, float | None],
    shape: tuple[int, ...],
    dtype: torch.dtype,
    layout: str,
) -> None:
    x = accuracy.arrange(accuracy.make_tensor(shape, dtype), layout)
    accuracy.check_op(lambda t: torch.clamp(t, *bounds), x, overloads=["clamp"])


def test_clamp_tensor_bounds_and_inplace() -> None:
    x = accuracy.make_tensor((4, 6), torch.float32)
    low, high = -torch.rand(6), torch.rand(4, 1)
    accuracy.check_op(torch.clamp, x, low, high, overloads=["clamp.Tensor"])
    accuracy.check_op(lambda t: t.clamp_(min=-0.5), x, overloads=["clamp_"])


def test_clamp_needs_a_bound() -> None:
    from gems_kernels.ops import clamp

    with pytest.raises(ValueError, match="at least one of 'min' and 'max'"):
        clamp(torch.ones(2))


@pytest.mark.parametrize(
    ("shape", "dtype"),
    accuracy.dtype_variants(
        [(s,) for s in accuracy.pointwise_shapes()], [torch.float32, torch.bfloat16, torch.int32]
    ),
)
def test_masked_fill(shape: tuple[int, ...], dtype: torch.dtype) -> None:
    x = accuracy.make_tensor(shape, dtype)
    mask = accuracy.make_tensor(shape[1:], torch.bool)
    accuracy.check_op(
        lambda t, m: t.masked_fill(m, -2.0), x, mask, overloads=["masked_fill.Scalar"]
    )
    accuracy.check_op(
        lambda t, m: t.masked_fill_(m, torch.tensor(3)), x, mask, overloads=["masked_fill_.Tensor"]
    )
