"""Cross-entropy over class scores (N, C) in one kernel: the loss and its gradient together.

The forward walks each row twice (online log-sum-exp, then softmax minus one-hot) and keeps the
gradient of the reduced loss, so the backward only scales it by the incoming gradient. This is
the path ``F.cross_entropy`` takes under gems for 2-D scores without class weights or label
smoothing; other calls decompose into log_softmax + nll_loss (see ``ops/nll_loss.py``).
"""

from __future__ import annotations

from typing import Any, Final

import torch
import triton
import triton.language as tl

from gems_kernels import autograd, host
from gems_kernels.backends import current_vendor, launch_config, tuning
from gems_kernels.ops import arithmetic, copies, reductions
from gems_kernels.ops.registering import Registration
from gems_kernels.ops.softmax import row_max_and_sum_exp
from gems_kernels.pointwise.rounding import store

__all__ = ["REGISTRATIONS", "CrossEntropy", "cross_entropy_loss", "is_plain_cross_entropy"]


@triton.jit
def _cross_entropy_forward_kernel(
    scores, target, losses, valid_out, grad, num_classes, ignore_index,
    BLOCK_N: tl.constexpr,
):  # fmt: skip
    row = tl.program_id(0).to(tl.int64)
    base = row * num_classes
    label = tl.load(target + row)
    valid = label != ignore_index
    row_max, total = row_max_and_sum_exp(scores + base, num_classes, BLOCK_N)
    log_total = row_max + tl.log(total)
    safe = tl.where(valid, label, 0).to(tl.int64)
    picked = tl.load(scores + base + safe).to(tl.float32)
    store(losses + row, tl.where(valid, log_total - picked, 0.0))
    store(valid_out + row, valid.to(tl.float32))
    for start in range(0, num_classes, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = cols < num_classes
        values = tl.load(scores + base + cols, mask=mask, other=0.0).to(tl.float32)
        probability = tl.exp(values - log_total) - tl.where(cols == safe, 1.0, 0.0)
        store(grad + base + cols, tl.where(valid, probability, 0.0), mask=mask)


def is_plain_cross_entropy(
    scores: torch.Tensor,
    target: torch.Tensor,
    weight: Any = None,
    reduction: int = 1,
    ignore_index: int = -100,
    label_smoothing: float = 0.0,
) -> bool:
    """Condition: (N, C) float scores, (N,) integer targets, mean or sum, no weight/smoothing."""
    return (
        scores.dim() == 2
        and scores.dtype in (torch.float16, torch.bfloat16, torch.float32)
        and target.dim() == 1
        and not target.is_floating_point()
        and weight is None
        and label_smoothing == 0.0
        and reduction in (1, 2)
    )


class CrossEntropy(torch.autograd.Function):
    """Keeps the gradient computed in the forward; the backward scales it."""

    @staticmethod
    def forward(ctx: Any, scores: torch.Tensor, target: torch.Tensor, mean: bool,
                ignore_index: int) -> torch.Tensor:  # fmt: skip
        rows = copies.contiguous(scores)
        num_rows, num_classes = rows.shape
        losses = torch.empty(num_rows, dtype=torch.float32, device=rows.device)
        valid = torch.empty(num_rows, dtype=torch.float32, device=rows.device)
        grad = torch.empty_like(rows)
        if num_rows:
            config = launch_config(current_vendor().name, "row")
            block = min(tuning.next_power_of_2(num_classes), config.block_size)
            _cross_entropy_forward_kernel.run(
                rows, copies.contiguous(target), losses, valid, grad, num_classes, ignore_index,
                BLOCK_N=block, num_warps=config.num_warps,
                grid=(num_rows,), warmup=False,
            )  # fmt: skip
        loss = reductions.sum(losses)
        if mean:
            count = reductions.sum(valid)
            loss = arithmetic.div(loss, count)
            grad = arithmetic.div(grad, count)
        ctx.save_for_backward(grad)
        return loss if loss.dtype == scores.dtype else copies.to_copy(loss, dtype=scores.dtype)

    @staticmethod
    @host.host_code
    def backward(ctx: Any, grad_loss: torch.Tensor) -> tuple[Any, ...]:
        (grad,) = ctx.saved_tensors
        return arithmetic.mul(grad, grad_loss), None, None, None


def cross_entropy_loss(
    scores: torch.Tensor,
    target: torch.Tensor,
    weight: Any = None,
    reduction: int = 1,
    ignore_index: int = -100,
    label_smoothing: float = 0.0,
) -> torch.Tensor:
    """aten::cross_entropy_loss for plain (N, C) classification."""
    if not is_plain_cross_entropy(scores, target, weight, reduction, ignore_index, label_smoothing):
        raise NotImplementedError(
            "cross_entropy_loss: only (N, C) scores without weight or label smoothing, "
            "reduction mean or sum"
        )
    return autograd.apply(CrossEntropy, scores, target, reduction == 1, ignore_index)


REGISTRATIONS: Final[tuple[Registration, ...]] = (
    Registration(
        "cross_entropy_loss",
        cross_entropy_loss,
        condition=is_plain_cross_entropy,
        autograd=True,
    ),
)
