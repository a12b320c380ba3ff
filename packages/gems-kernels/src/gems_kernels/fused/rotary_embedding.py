"""Rotary position embedding (half-split layout), forward and backward.

out[..., :d] = x1 * cos - x2 * sin and out[..., d:] = x2 * cos + x1 * sin, where x1, x2 are the
halves of the last dim and cos, sin broadcast against them; the backward rotates by -sin.
"""

from __future__ import annotations

from typing import Any

import torch
import triton  # type: ignore[import-untyped]
import triton.language as tl  # type: ignore[import-untyped]  # noqa: F401  (Triton's interpreter needs it in the kernels' globals)

from gems_kernels.fused.halves import split_halves
from gems_kernels.pointwise import pointwise_dynamic

__all__ = ["RotaryEmbedding", "rotary_embedding"]


@pointwise_dynamic(
    is_tensor=[True, True, True, True, False],
    promotions=[((0, 1), "DEFAULT"), ((0, 1), "DEFAULT")],
)
@triton.jit
def _rotate(x1, x2, cos, sin, direction):
    s = sin * direction
    return x1 * cos - x2 * s, x2 * cos + x1 * s


def _apply(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, direction: float) -> torch.Tensor:
    x1, x2 = split_halves(x, "rotary_embedding")
    out = torch.empty_like(x)
    first, second = split_halves(out, "rotary_embedding")
    _rotate(x1, x2, cos, sin, direction, out0=first, out1=second)
    return out


class RotaryEmbedding(torch.autograd.Function):
    """Saves cos and sin; the gradient is the inverse rotation of the incoming gradient."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(cos, sin)
        return _apply(x, cos, sin, 1.0)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[Any, ...]:
        cos, sin = ctx.saved_tensors
        return _apply(grad, cos, sin, -1.0), None, None


def rotary_embedding(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate ``x``'s last-dim halves by angles whose cos/sin broadcast to ``x[..., :d/2]``."""
    half = x.shape[-1] // 2 if x.dim() else 0
    if cos.shape != sin.shape or (cos.dim() and cos.shape[-1] != half):
        raise ValueError(
            f"rotary_embedding: cos {list(cos.shape)} and sin {list(sin.shape)} must match and "
            f"end in half of x's last dim ({half})"
        )
    return RotaryEmbedding.apply(x, cos, sin)
