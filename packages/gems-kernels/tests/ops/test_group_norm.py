"""group_norm forward and gradients (input, weight, bias)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from gems_kernels import accuracy

CASES = [((2, 4, 3), 2), ((1, 6, 5, 5), 3), ((3, 4), 4), ((2, 8, 2, 3, 2), 1)]


@pytest.mark.parametrize(("shape", "groups", "dtype"), accuracy.dtype_variants(CASES))
def test_forward_and_backward(shape: tuple[int, ...], groups: int, dtype: torch.dtype) -> None:
    x = accuracy.make_tensor(shape, dtype)
    grad = accuracy.make_tensor(shape, dtype)
    weight = accuracy.make_tensor(shape[1:2], dtype)
    bias = accuracy.make_tensor(shape[1:2], dtype)
    accuracy.check_op(
        accuracy.with_gradients(lambda t, w, b: F.group_norm(t, groups, w, b, eps=1e-5)),
        x,
        weight,
        bias,
        grad,
        overloads=["native_group_norm", "native_group_norm_backward"],
        reduce_size=x.numel(),
    )
