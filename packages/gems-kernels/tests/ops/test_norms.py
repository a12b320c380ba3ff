"""linalg_vector_norm for ord 1, 2 and inf; other orders stay in ATen."""

from __future__ import annotations

import math

import pytest
import torch
from gems_kernels import accuracy, ops, use_gems


@pytest.mark.parametrize(
    ("shape", "dims", "dtype"), accuracy.dtype_variants(accuracy.reduction_cases())
)
@pytest.mark.parametrize("order", [1, 2, math.inf], ids=["l1", "l2", "linf"])
def test_vector_norm(
    order: float, shape: tuple[int, ...], dims: list[int] | None, dtype: torch.dtype
) -> None:
    x = accuracy.make_tensor(shape, dtype)
    size = math.prod(shape) if dims is None else math.prod(shape[d] for d in dims)
    accuracy.check_op(
        lambda t: torch.linalg.vector_norm(t, order, dims),
        x,
        overloads=["linalg_vector_norm"],
        reduce_size=size,
    )


def test_other_orders_fall_back_to_aten() -> None:
    x = torch.randn(4, 5)
    with use_gems(include=["linalg_vector_norm"], record=True) as session:
        result = torch.linalg.vector_norm(x, 3)
    torch.testing.assert_close(result, torch.linalg.vector_norm(x, 3))
    assert session.recorder is not None and not session.recorder.seen
    with pytest.raises(NotImplementedError, match="ord: only"):
        ops.linalg_vector_norm(x, 3)
