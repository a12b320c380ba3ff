"""Residual add followed by RMS normalisation: (rms_norm(x + residual) * weight, x + residual)."""

from __future__ import annotations

from typing import Any

import torch

from gems_kernels import autograd
from gems_kernels.ops import arithmetic
from gems_kernels.ops.rms_norm import rms_norm_backward, rms_norm_forward

__all__ = ["FusedAddRmsNorm", "fused_add_rms_norm"]


class FusedAddRmsNorm(torch.autograd.Function):
    """Saves the sum, the weight and rstd; the sum's gradient flows to both addends."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor,
                eps: float) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
        total = arithmetic.add(x, residual)
        y, rstd = rms_norm_forward(total, weight.numel(), weight, eps)
        ctx.save_for_backward(total, weight, rstd)
        return y.view(total.shape), total

    @staticmethod
    def backward(ctx: Any, grad_y: torch.Tensor, grad_total: torch.Tensor) -> tuple[Any, ...]:
        total, weight, rstd = ctx.saved_tensors
        grad_x, grad_weight = rms_norm_backward(grad_y, total, weight.numel(), weight, rstd)
        assert grad_x is not None and grad_weight is not None
        grad_sum = grad_x.view(total.shape)
        if grad_total is not None:
            grad_sum = arithmetic.add(grad_sum, grad_total)
        return grad_sum, grad_sum, grad_weight.to(weight.dtype).view(weight.shape), None


def fused_add_rms_norm(
    x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6
) -> tuple[torch.Tensor, torch.Tensor]:
    """(normalised output, updated residual x + residual), normalising over ``weight``'s size."""
    if x.shape != residual.shape or x.shape[-1] != weight.numel():
        raise ValueError(
            f"fused_add_rms_norm: x {list(x.shape)} and residual {list(residual.shape)} must "
            f"match and end in weight's size {weight.numel()}"
        )
    return autograd.apply_pair(FusedAddRmsNorm, x, residual, weight, eps)
