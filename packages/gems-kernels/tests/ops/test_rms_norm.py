"""rms_norm (registered at the autograd key) forward and gradients against ATen."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from gems_kernels import accuracy

CASES = [((1, 7), (7,)), ((4, 33), (33,)), ((2, 3, 16), (3, 16)), ((3, 1100), (1100,))]


@pytest.mark.parametrize(("shape", "normalized", "dtype"), accuracy.dtype_variants(CASES))
@pytest.mark.parametrize("affine", [True, False], ids=["weight", "plain"])
def test_forward_and_backward(
    shape: tuple[int, ...], normalized: tuple[int, ...], affine: bool, dtype: torch.dtype
) -> None:
    x = accuracy.make_tensor(shape, dtype)
    grad = accuracy.make_tensor(shape, dtype)
    weight = accuracy.make_tensor(normalized, dtype) if affine else None
    accuracy.check_op(
        accuracy.with_gradients(lambda t, w: F.rms_norm(t, normalized, w, eps=1e-6)),
        x,
        weight,
        grad,
        overloads=["rms_norm"],
        reduce_size=max(x.numel() // shape[-1], shape[-1]),
    )


def test_default_eps_and_inference() -> None:
    x = accuracy.make_tensor((3, 10), torch.float32)
    w = accuracy.make_tensor((10,), torch.float32)
    accuracy.check_op(
        lambda t, u: F.rms_norm(t, (10,), u),
        x.requires_grad_(),
        w,
        overloads=["rms_norm"],
        reduce_size=10,
    )
