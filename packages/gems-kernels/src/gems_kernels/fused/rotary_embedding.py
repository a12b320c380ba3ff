"""Rotary position embedding, forward and backward.

out1 = x1 * cos - x2 * sin and out2 = x2 * cos + x1 * sin, where (x1, x2) are the halves of the
last dim (half-split layout, as Llama's ``rotate_half``) or, with ``rotary_interleaved=True``,
its even and odd elements (GPT-J / Megatron's interleaved layout), and cos, sin broadcast against
them; the backward rotates by -sin. The pairs are strided views: nothing is copied.
"""

from __future__ import annotations

from typing import Any

import torch
import triton
import triton.language as tl  # noqa: F401  (Triton's interpreter needs it in the kernels' globals)

from gems_kernels import autograd
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


def _pairs(x: torch.Tensor, interleaved: bool) -> tuple[torch.Tensor, torch.Tensor]:
    if not interleaved:
        return split_halves(x, "rotary_embedding")
    if x.dim() == 0 or x.shape[-1] % 2:
        raise ValueError(f"rotary_embedding: x must have an even last dim, got {list(x.shape)}")
    return x[..., 0::2], x[..., 1::2]


def _apply(
    x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, direction: float, interleaved: bool
) -> torch.Tensor:
    x1, x2 = _pairs(x, interleaved)
    out = torch.empty_like(x)
    first, second = _pairs(out, interleaved)
    _rotate(x1, x2, cos, sin, direction, out0=first, out1=second)
    return out


class RotaryEmbedding(torch.autograd.Function):
    """Saves cos and sin; the gradient is the inverse rotation of the incoming gradient."""

    @staticmethod
    def forward(
        ctx: Any, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, interleaved: bool
    ) -> torch.Tensor:
        ctx.save_for_backward(cos, sin)
        ctx.interleaved = interleaved
        return _apply(x, cos, sin, 1.0, interleaved)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[Any, ...]:
        cos, sin = ctx.saved_tensors
        return _apply(grad, cos, sin, -1.0, ctx.interleaved), None, None, None


def rotary_embedding(
    x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, rotary_interleaved: bool = False
) -> torch.Tensor:
    """Rotate ``x``'s last-dim pairs (halves, or even/odd elements with ``rotary_interleaved``)
    by angles whose cos/sin broadcast to ``x[..., :d/2]``."""
    half = x.shape[-1] // 2 if x.dim() else 0
    if cos.shape != sin.shape or (cos.dim() and cos.shape[-1] != half):
        raise ValueError(
            f"rotary_embedding: cos {list(cos.shape)} and sin {list(sin.shape)} must match and "
            f"end in half of x's last dim ({half})"
        )
    return autograd.apply(RotaryEmbedding, x, cos, sin, rotary_interleaved)
