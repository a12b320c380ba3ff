"""silu(a) * b, forward and backward in one pointwise kernel each (SwiGLU's gate)."""

from __future__ import annotations

from typing import Any

import torch
import triton
import triton.language as tl  # noqa: F401  (Triton's interpreter needs it in the kernels' globals)

from gems_kernels import autograd
from gems_kernels.fused.halves import split_halves
from gems_kernels.ops import scalar_math
from gems_kernels.pointwise import pointwise_dynamic

__all__ = ["SiluAndMul", "silu_and_mul"]


@pointwise_dynamic(is_tensor=[True, True], promotions=[((0, 1), "DEFAULT")])
@triton.jit
def _silu_and_mul_forward(a, b):
    return a * scalar_math.sigmoid(a) * b


@pointwise_dynamic(
    is_tensor=[True, True, True], promotions=(((0, 1, 2), "DEFAULT"), ((0, 1, 2), "DEFAULT"))
)
@triton.jit
def _silu_and_mul_backward(grad, a, b):
    s = scalar_math.sigmoid(a)
    return grad * b * s * (1.0 + a * (1.0 - s)), grad * a * s


class SiluAndMul(torch.autograd.Function):
    """Saves the two inputs; the backward recomputes the sigmoid."""

    @staticmethod
    def forward(ctx: Any, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(a, b)
        return _silu_and_mul_forward(a, b)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        a, b = ctx.saved_tensors
        return _silu_and_mul_backward(grad, a, b)


def silu_and_mul(x: torch.Tensor, y: torch.Tensor | None = None) -> torch.Tensor:
    """silu(x) * y; with one argument, x's last dim holds the two halves (gate, up)."""
    a, b = split_halves(x, "silu_and_mul") if y is None else (x, y)
    return autograd.apply(SiluAndMul, a, b)
