"""Group normalisation, forward and backward (aten::native_group_norm and its backward).

Each (sample, group) is one row of C/G * HxW elements normalised by the centring kernels of
``ops/layer_norm.py``; the per-channel affine and its gradients run as pointwise kernels and
Triton reductions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import torch

from gems_kernels.ops import arithmetic, reductions
from gems_kernels.ops.layer_norm import (
    normalize_rows,
    normalize_rows_backward,
    stats_dtype,
)
from gems_kernels.ops.reductions import is_floating_input
from gems_kernels.ops.registering import Registration

__all__ = ["REGISTRATIONS", "group_norm_backward", "group_norm_forward"]


def _channel_view(t: torch.Tensor) -> torch.Tensor:
    return t.view(1, -1, 1)


def group_norm_forward(
    x: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    batch: int,
    channels: int,
    spatial: int,
    groups: int,
    eps: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(y, mean, rstd) with mean and rstd of shape (N, G)."""
    if channels % groups:
        raise RuntimeError(f"group: {channels} channels are not divisible into {groups} groups")
    row_size = channels // groups * spatial
    normalized, mean, rstd = normalize_rows(x, row_size, None, None, eps, center=True)
    y = normalized.view(batch, channels, spatial)
    if weight is not None:
        y = arithmetic.mul(y, _channel_view(weight))
    if bias is not None:
        y = arithmetic.add(y, _channel_view(bias))
    dtype = stats_dtype(x)
    return (
        y.to(x.dtype).view(x.shape),
        mean.to(dtype).view(batch, groups),
        rstd.to(dtype).view(batch, groups),
    )


def group_norm_backward(
    grad_y: torch.Tensor,
    x: torch.Tensor,
    mean: torch.Tensor,
    rstd: torch.Tensor,
    weight: torch.Tensor | None,
    batch: int,
    channels: int,
    spatial: int,
    groups: int,
    output_mask: Sequence[bool],
) -> tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor | None]:
    """(grad_x, grad_weight, grad_bias) as selected by ``output_mask``."""
    row_size = channels // groups * spatial
    grad = grad_y.contiguous().view(batch, channels, spatial)
    mean_rows, rstd_rows = mean.reshape(-1).float(), rstd.reshape(-1).float()
    grad_x = grad_weight = grad_bias = None
    if output_mask[0]:
        scaled = arithmetic.mul(grad, _channel_view(weight)) if weight is not None else grad
        grad_rows, _, _ = normalize_rows_backward(scaled, x, row_size, None, mean_rows, rstd_rows)
        assert grad_rows is not None
        grad_x = grad_rows.to(x.dtype).view(x.shape)
    if output_mask[1] and weight is not None:
        # normalized = (x - mean) * rstd per (sample, group) row, recomputed pointwise.
        rows = x.contiguous().view(batch * groups, row_size)
        normalized = arithmetic.mul(
            arithmetic.sub(rows, mean_rows.view(-1, 1)), rstd_rows.view(-1, 1)
        ).view(batch, channels, spatial)
        product = arithmetic.mul(grad, normalized)
        grad_weight = reductions.sum_dim(product, [0, 2], dtype=torch.float32).to(weight.dtype)
    if output_mask[2]:
        grad_bias = reductions.sum_dim(grad, [0, 2], dtype=torch.float32)
        grad_bias = grad_bias.to(weight.dtype if weight is not None else x.dtype)
    return grad_x, grad_weight, grad_bias


REGISTRATIONS: Final[tuple[Registration, ...]] = (
    Registration("native_group_norm", group_norm_forward, condition=is_floating_input),
    Registration("native_group_norm_backward", group_norm_backward, condition=is_floating_input),
)
