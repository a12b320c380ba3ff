"""scaled_dot_product_attention forward (inference) against the float64 reference."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from gems_kernels import accuracy, use_gems

CASES = [
    ((1, 1, 5, 16), 5, False),
    ((2, 3, 17, 8), 17, True),
    ((2, 20, 32), 9, False),
    ((1, 2, 40, 24), 40, True),
]


@pytest.mark.parametrize(("shape", "key_len", "causal", "dtype"), accuracy.dtype_variants(CASES))
def test_forward(shape: tuple[int, ...], key_len: int, causal: bool, dtype: torch.dtype) -> None:
    q = accuracy.make_tensor(shape, dtype, low=-1, high=1)
    k = accuracy.make_tensor((*shape[:-2], key_len, shape[-1]), dtype, low=-1, high=1)
    v = accuracy.make_tensor((*shape[:-2], key_len, shape[-1]), dtype)
    accuracy.check_op(
        lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=causal),
        q,
        k,
        v,
        overloads=["scaled_dot_product_attention"],
        reduce_size=key_len,
    )


def test_training_calls_fall_back_to_aten() -> None:
    q = torch.randn(1, 4, 16, requires_grad=True)
    with use_gems(include=["scaled_dot_product_attention"], record=True) as session:
        out = F.scaled_dot_product_attention(q, q, q)
        out.sum().backward()
    assert session.recorder is not None and not session.recorder.seen
    assert q.grad is not None
