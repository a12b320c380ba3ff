"""Negative log-likelihood loss over class scores (N, C) or (C,), forward and backward.

``F.cross_entropy`` reaches these through ``log_softmax`` followed by ``nll_loss``; both halves
run on Triton kernels (see ``ops/softmax.py``).
"""

from __future__ import annotations

from typing import Any, Final

import torch
import triton
import triton.language as tl

from gems_kernels.backends import current_vendor, launch_config, tuning
from gems_kernels.ops import arithmetic, reductions
from gems_kernels.ops.registering import Registration
from gems_kernels.pointwise.rounding import store

__all__ = [
    "REDUCTIONS",
    "REGISTRATIONS",
    "is_class_scores",
    "is_grad_of_class_scores",
    "nll_loss_backward",
    "nll_loss_forward",
]

REDUCTIONS: Final = {0: "none", 1: "mean", 2: "sum"}


@triton.jit
def _nll_loss_forward_kernel(
    scores, target, weight, losses, weights, num_classes, ignore_index,
    HAS_WEIGHT: tl.constexpr,
):  # fmt: skip
    row = tl.program_id(0)
    label = tl.load(target + row)
    valid = (label != ignore_index) & (label >= 0) & (label < num_classes)
    safe = tl.where(valid, label, 0).to(tl.int64)
    score = tl.load(scores + row.to(tl.int64) * num_classes + safe).to(tl.float32)
    scale = 1.0
    if HAS_WEIGHT:
        scale = tl.load(weight + safe).to(tl.float32)
    scale = tl.where(valid, scale, 0.0)
    store(losses + row, -score * scale)
    store(weights + row, scale)


@triton.jit
def _nll_loss_backward_kernel(
    grad_out, target, weight, grad_scores, num_classes, ignore_index,
    HAS_WEIGHT: tl.constexpr, PER_ROW: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    row = tl.program_id(0)
    label = tl.load(target + row)
    valid = (label != ignore_index) & (label >= 0) & (label < num_classes)
    safe = tl.where(valid, label, 0).to(tl.int64)
    if PER_ROW:  # noqa: SIM108  (constexpr branch)
        grad = tl.load(grad_out + row).to(tl.float32)
    else:
        grad = tl.load(grad_out).to(tl.float32)
    if HAS_WEIGHT:
        grad = grad * tl.load(weight + safe).to(tl.float32)
    grad = tl.where(valid, -grad, 0.0)
    base = row.to(tl.int64) * num_classes
    for start in range(0, num_classes, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        store(grad_scores + base + cols, tl.where(cols == safe, grad, 0.0), mask=cols < num_classes)


def is_class_scores(scores: torch.Tensor, target: torch.Tensor, *args: object) -> bool:
    """Condition: (N, C) or (C,) floating scores (higher ranks go through nll_loss2d)."""
    return scores.dim() in (1, 2) and scores.is_floating_point()


def _check_targets(target: torch.Tensor, num_classes: int, ignore_index: int) -> None:
    # Only checked where it costs no device synchronisation; on GPUs out-of-range labels count
    # as ignored.
    if target.device.type == "cpu" and target.numel():
        valid = target[target != ignore_index]
        if valid.numel() and (int(valid.min()) < 0 or int(valid.max()) >= num_classes):
            raise IndexError(f"target: class labels must lie in [0, {num_classes})")


def nll_loss_forward(
    scores: torch.Tensor,
    target: torch.Tensor,
    weight: torch.Tensor | None,
    reduction: int,
    ignore_index: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """aten::nll_loss_forward: (loss, total_weight)."""
    if reduction not in REDUCTIONS:
        raise ValueError(f"reduction: expected one of {sorted(REDUCTIONS)}, got {reduction}")
    rows = scores.contiguous().view(-1, scores.shape[-1])
    labels = target.contiguous().view(-1)
    num_rows, num_classes = rows.shape
    _check_targets(labels, num_classes, ignore_index)
    losses = torch.empty(num_rows, dtype=torch.float32, device=scores.device)
    weights = torch.empty(num_rows, dtype=torch.float32, device=scores.device)
    if num_rows:
        _nll_loss_forward_kernel.run(
            rows, labels, weight, losses, weights, num_classes, ignore_index,
            HAS_WEIGHT=weight is not None,
            grid=(num_rows,), warmup=False,
        )  # fmt: skip
    mode = REDUCTIONS[reduction]
    if mode == "none":
        loss = losses.to(scores.dtype).view(target.shape)
        return loss, torch.zeros((), dtype=scores.dtype, device=scores.device)
    total_weight = reductions.sum(weights)
    loss = reductions.sum(losses)
    if mode == "mean":
        loss = arithmetic.div(loss, total_weight)
    return loss.to(scores.dtype), total_weight.to(scores.dtype)


def nll_loss_backward(
    grad_output: torch.Tensor,
    scores: torch.Tensor,
    target: torch.Tensor,
    weight: torch.Tensor | None,
    reduction: int,
    ignore_index: int,
    total_weight: torch.Tensor,
) -> torch.Tensor:
    """aten::nll_loss_backward: the gradient with respect to the scores."""
    num_classes = scores.shape[-1]
    labels = target.contiguous().view(-1)
    grad_scores = torch.empty(scores.shape, dtype=scores.dtype, device=scores.device)
    num_rows = labels.numel()
    if num_rows == 0:
        return grad_scores
    mode = REDUCTIONS[reduction]
    grad = grad_output.contiguous()
    if mode == "mean":
        # The summed weight stays on the device: no synchronisation to read it.
        grad = arithmetic.div(grad, total_weight)
    block = min(
        tuning.next_power_of_2(num_classes), launch_config(current_vendor().name, "row").block_size
    )
    _nll_loss_backward_kernel.run(
        grad, labels, weight, grad_scores, num_classes, ignore_index,
        HAS_WEIGHT=weight is not None, PER_ROW=mode == "none", BLOCK_N=block,
        grid=(num_rows,), warmup=False,
    )  # fmt: skip
    return grad_scores


def is_grad_of_class_scores(grad: Any, scores: Any, target: Any, *args: Any) -> bool:
    """Condition of nll_loss_backward: the forward's condition on its scores and target."""
    return is_class_scores(scores, target)


REGISTRATIONS: Final[tuple[Registration, ...]] = (
    Registration("nll_loss_forward", nll_loss_forward, condition=is_class_scores),
    Registration("nll_loss_backward", nll_loss_backward, condition=is_grad_of_class_scores),
)
