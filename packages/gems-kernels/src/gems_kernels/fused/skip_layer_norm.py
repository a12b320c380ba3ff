"""Layer normalisation of x + skip (a residual connection fused into the norm)."""

from __future__ import annotations

from typing import Any

import torch

from gems_kernels import autograd
from gems_kernels.ops import arithmetic
from gems_kernels.ops.layer_norm import normalize_rows, normalize_rows_backward

__all__ = ["SkipLayerNorm", "skip_layer_norm"]


class SkipLayerNorm(torch.autograd.Function):
    """Saves the sum and its statistics; the sum's gradient flows to x and skip."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, skip: torch.Tensor, weight: torch.Tensor,
                bias: torch.Tensor | None, eps: float) -> torch.Tensor:  # fmt: skip
        total = arithmetic.add(x, skip)
        y, mean, rstd = normalize_rows(total, weight.numel(), weight, bias, eps, center=True)
        ctx.save_for_backward(total, weight, mean, rstd)
        ctx.has_bias = bias is not None
        return y.view(total.shape)

    @staticmethod
    def backward(ctx: Any, grad_y: torch.Tensor) -> tuple[Any, ...]:
        total, weight, mean, rstd = ctx.saved_tensors
        grad_x, grad_weight, grad_bias = normalize_rows_backward(
            grad_y, total, weight.numel(), weight, mean, rstd,
            grad_parameters=(True, ctx.has_bias),
        )  # fmt: skip
        assert grad_x is not None and grad_weight is not None
        grad_x = grad_x.view(total.shape)
        grad_weight = grad_weight.to(weight.dtype).view(weight.shape)
        if grad_bias is not None:
            grad_bias = grad_bias.to(weight.dtype).view(weight.shape)
        return grad_x, grad_x, grad_weight, grad_bias, None


def skip_layer_norm(
    x: torch.Tensor,
    skip: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None = None,
    eps: float = 1e-5,
) -> torch.Tensor:
    """layer_norm(x + skip) over ``weight``'s size, with weight and optional bias."""
    if x.shape != skip.shape or x.shape[-1] != weight.numel():
        raise ValueError(
            f"skip_layer_norm: x {list(x.shape)} and skip {list(skip.shape)} must match and "
            f"end in weight's size {weight.numel()}"
        )
    return autograd.apply(SkipLayerNorm, x, skip, weight, bias, eps)
