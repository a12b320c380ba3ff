"""silu_and_mul and gelu_and_mul: outputs and gradients against torch compositions."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from gems_kernels import accuracy, fused

SHAPES = [(1, 2), (3, 10), (2, 3, 66)]


@pytest.mark.parametrize(("shape", "dtype"), accuracy.dtype_variants([(s,) for s in SHAPES]))
def test_silu_and_mul(shape: tuple[int, ...], dtype: torch.dtype) -> None:
    x = accuracy.make_tensor(shape, dtype)
    grad = accuracy.make_tensor((*shape[:-1], shape[-1] // 2), dtype)

    def reference(t: torch.Tensor) -> torch.Tensor:
        a, b = t.chunk(2, dim=-1)
        return F.silu(a) * b

    accuracy.check_fused(
        accuracy.with_gradients(fused.silu_and_mul), accuracy.with_gradients(reference), x, grad
    )


@pytest.mark.parametrize("dtype", accuracy.FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_and_mul_two_tensors(approximate: str, dtype: torch.dtype) -> None:
    a, b = accuracy.make_tensor((4, 7), dtype), accuracy.make_tensor((4, 7), dtype)
    grad = accuracy.make_tensor((4, 7), dtype)
    accuracy.check_fused(
        accuracy.with_gradients(lambda x, y: fused.gelu_and_mul(x, y, approximate)),
        accuracy.with_gradients(lambda x, y: F.gelu(x, approximate=approximate) * y),
        a, b, grad,
    )  # fmt: skip


def test_odd_last_dim_is_rejected() -> None:
    with pytest.raises(ValueError, match="silu_and_mul: x must have an even last dim"):
        fused.silu_and_mul(torch.ones(2, 3))
