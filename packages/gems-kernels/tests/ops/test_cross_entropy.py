"""The fused cross_entropy_loss (autograd key): loss and gradient against the reference."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from gems_kernels import accuracy, use_gems
from gems_kernels.coverage import NativeOpTrace


@pytest.mark.parametrize(
    ("shape", "reduction", "dtype"),
    accuracy.dtype_variants([((1, 3), "mean"), ((8, 5), "sum"), ((6, 1030), "mean"),
                             ((4, 7), "sum")]),
)  # fmt: skip
def test_loss_and_gradient(shape: tuple[int, int], reduction: str, dtype: torch.dtype) -> None:
    scores = accuracy.make_tensor(shape, dtype)
    target = accuracy.make_tensor(shape[:1], torch.int64, low=0, high=shape[1] - 1)
    target[0] = -100  # an ignored row
    if shape[0] == 1:
        target[0] = 1
    step = accuracy.with_gradients(lambda s, t: F.cross_entropy(s, t, reduction=reduction))
    accuracy.check_op(
        step,
        scores,
        target,
        torch.tensor(1.5, dtype=dtype),
        overloads=["cross_entropy_loss"],
        reduce_size=shape[1],
    )


def test_weighted_or_smoothed_losses_decompose() -> None:
    scores, target = torch.randn(4, 5), torch.tensor([0, 1, 2, 3])
    with use_gems(include=["cross_entropy_loss"], record=True) as session:
        weighted = F.cross_entropy(scores, target, weight=torch.ones(5))
        smoothed = F.cross_entropy(scores, target, label_smoothing=0.1)
    assert session.recorder is not None and not session.recorder.seen
    torch.testing.assert_close(weighted, F.cross_entropy(scores, target))
    assert smoothed.item() > 0


def test_half_precision_loss_is_cast_on_gems() -> None:
    """A classifier's bfloat16 scores: the float32 loss is cast back to bfloat16 by the copy
    kernel (it was a host-code ``.to`` on ATen before)."""
    scores = accuracy.make_tensor((4, 10), torch.bfloat16).requires_grad_()
    target = torch.tensor([0, 3, 9, 2], device=scores.device)
    with use_gems(), NativeOpTrace() as trace:
        loss = F.cross_entropy(scores, target)
        loss.backward()
    assert loss.dtype == torch.bfloat16
    assert dict(trace.host) == {} and dict(trace.native) == {}
