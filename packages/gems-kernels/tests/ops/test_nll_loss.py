"""nll_loss and cross_entropy (log_softmax + nll_loss) forward and backward."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from gems_kernels import accuracy

LOSS_OPS = ["_log_softmax", "nll_loss_forward", "_log_softmax_backward_data", "nll_loss_backward"]


def cross_entropy(
    scores: torch.Tensor, target: torch.Tensor, weight: torch.Tensor | None, reduction: str
) -> tuple[torch.Tensor, torch.Tensor]:
    leaf = scores.detach().requires_grad_()
    loss = F.cross_entropy(leaf, target, weight, ignore_index=1, reduction=reduction)
    loss.backward(torch.ones_like(loss))
    return loss, leaf.grad


@pytest.mark.parametrize(
    ("shape", "dtype"), accuracy.dtype_variants([((1, 3),), ((8, 5),), ((6, 1030),)])
)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
def test_cross_entropy(
    shape: tuple[int, int], reduction: str, weighted: bool, dtype: torch.dtype
) -> None:
    scores = accuracy.make_tensor(shape, dtype)
    target = accuracy.make_tensor(shape[:1], torch.int64, low=0, high=shape[1] - 1)
    weight = accuracy.make_tensor(shape[1:], dtype, low=0.5, high=2.0) if weighted else None
    accuracy.check_op(
        lambda s, t, w: cross_entropy(s, t, w, reduction),
        scores,
        target,
        weight,
        overloads=LOSS_OPS,
        reduce_size=shape[1],
    )


def test_single_sample_scores() -> None:
    scores = accuracy.make_tensor((7,), torch.float32)
    accuracy.check_op(
        lambda s: F.nll_loss(s, torch.tensor(3)), scores, overloads=["nll_loss_forward"]
    )


def test_out_of_range_target_is_an_index_error() -> None:
    from gems_kernels import ops

    with pytest.raises(IndexError, match=r"target: class labels must lie in \[0, 3\)"):
        ops.nll_loss_forward(torch.randn(2, 3), torch.tensor([0, 3]), None, 1, -100)
