"""Splitting a fused input's last dim into its two halves."""

from __future__ import annotations

import torch

__all__ = ["split_halves"]


def split_halves(x: torch.Tensor, name: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The first and second half of ``x``'s last dim (views, no copy)."""
    if x.dim() == 0 or x.shape[-1] % 2:
        raise ValueError(f"{name}: x must have an even last dim, got shape {list(x.shape)}")
    half = x.shape[-1] // 2
    return x[..., :half], x[..., half:]
