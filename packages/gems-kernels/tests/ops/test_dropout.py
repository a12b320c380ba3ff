"""Dropout: the kept fraction, scaling, reproducibility and the backward."""

from __future__ import annotations

import torch
from gems_kernels import accuracy, ops, use_gems


def test_mask_rate_scaling_and_seed() -> None:
    x = torch.ones(64, 64)
    # F.dropout reaches native_dropout on GPUs only; on CPU ATen uses bernoulli_, so call it.
    with use_gems(include=["native_dropout"], record=True) as session:
        torch.manual_seed(3)
        first, _ = torch.native_dropout(x, 0.25, True)
        torch.manual_seed(3)
        second, _ = torch.native_dropout(x, 0.25, True)
    assert session.recorder is not None and "native_dropout" in session.recorder.seen
    assert torch.equal(first, second)
    kept = first != 0
    assert 0.70 < kept.float().mean().item() < 0.80
    assert torch.allclose(first[kept], torch.full_like(first[kept], 1 / 0.75))


def test_eval_and_extremes() -> None:
    x = accuracy.make_tensor((5, 7), torch.float32)
    out, mask = ops.native_dropout(x, 0.5, False)
    assert torch.equal(out, x) and bool(mask.all())
    out, mask = ops.native_dropout(x, 1.0, True)
    assert not bool(out.any()) and not bool(mask.any())


def test_backward_uses_the_mask() -> None:
    grad = accuracy.make_tensor((4, 9), torch.float32)
    mask = accuracy.make_tensor((4, 9), torch.bool)
    accuracy.check_op(
        lambda g, m: torch.ops.aten.native_dropout_backward(g, m, 2.0),
        grad,
        mask,
        overloads=["native_dropout_backward"],
    )
