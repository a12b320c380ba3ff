"""group_norm forward and gradients (input, weight, bias)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from gems_kernels import accuracy

CASES = [((2, 4, 3), 2), ((1, 6, 5, 5), 3), ((3, 4), 4), ((2, 8, 2, 3, 2), 1)]


def run(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, grad: torch.Tensor, groups: int
) -> tuple[torch.Tensor, ...]:
    leaves = [t.detach().requires_grad_() for t in (x, weight, bias)]
    y = F.group_norm(leaves[0], groups, leaves[1], leaves[2], eps=1e-5)
    y.backward(grad)
    return (y, *(leaf.grad for leaf in leaves))


@pytest.mark.parametrize(("shape", "groups", "dtype"), accuracy.dtype_variants(CASES))
def test_forward_and_backward(shape: tuple[int, ...], groups: int, dtype: torch.dtype) -> None:
    x = accuracy.make_tensor(shape, dtype)
    grad = accuracy.make_tensor(shape, dtype)
    weight = accuracy.make_tensor(shape[1:2], dtype)
    bias = accuracy.make_tensor(shape[1:2], dtype)
    accuracy.check_op(
        lambda *a: run(*a, groups),
        x,
        weight,
        bias,
        grad,
        overloads=["native_group_norm", "native_group_norm_backward"],
        reduce_size=x.numel(),
    )
