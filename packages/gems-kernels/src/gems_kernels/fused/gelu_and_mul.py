"""gelu(a) * b (GeGLU's gate), erf or tanh GELU, forward and backward."""

from __future__ import annotations

from typing import Any

import torch
import triton
import triton.language as tl

from gems_kernels import autograd
from gems_kernels.fused.halves import split_halves
from gems_kernels.ops import scalar_math
from gems_kernels.pointwise import pointwise_dynamic

__all__ = ["GeluAndMul", "gelu_and_mul"]

_ONE = [((0, 1), "DEFAULT")]
_TWO = (((0, 1, 2), "DEFAULT"), ((0, 1, 2), "DEFAULT"))


@triton.jit
def _gelu_erf(a):
    """(gelu(a), gelu'(a)) with the exact erf GELU."""
    cdf = 0.5 * (1.0 + scalar_math.erf(a * 0.7071067811865476))
    return a * cdf, cdf + a * tl.exp(-0.5 * a * a) * 0.3989422804014327


@triton.jit
def _gelu_tanh(a):
    """(gelu(a), gelu'(a)) with the tanh approximation."""
    t = scalar_math.tanh(0.7978845608028654 * (a + 0.044715 * a * a * a))
    d_inner = 0.7978845608028654 * (1.0 + 3.0 * 0.044715 * a * a)
    return 0.5 * a * (1.0 + t), 0.5 * (1.0 + t) + 0.5 * a * (1.0 - t * t) * d_inner


@pointwise_dynamic(is_tensor=[True, True], promotions=_ONE)
@triton.jit
def _erf_forward(a, b):
    value, _ = _gelu_erf(a)
    return value * b


@pointwise_dynamic(is_tensor=[True, True], promotions=_ONE)
@triton.jit
def _tanh_forward(a, b):
    value, _ = _gelu_tanh(a)
    return value * b


@pointwise_dynamic(is_tensor=[True, True, True], promotions=_TWO)
@triton.jit
def _erf_backward(grad, a, b):
    value, slope = _gelu_erf(a)
    return grad * b * slope, grad * value


@pointwise_dynamic(is_tensor=[True, True, True], promotions=_TWO)
@triton.jit
def _tanh_backward(grad, a, b):
    value, slope = _gelu_tanh(a)
    return grad * b * slope, grad * value


class GeluAndMul(torch.autograd.Function):
    """Saves the two inputs; the backward recomputes GELU and its slope."""

    @staticmethod
    def forward(ctx: Any, a: torch.Tensor, b: torch.Tensor, tanh: bool) -> torch.Tensor:
        ctx.save_for_backward(a, b)
        ctx.tanh = tanh
        return (_tanh_forward if tanh else _erf_forward)(a, b)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[Any, ...]:
        a, b = ctx.saved_tensors
        grad_a, grad_b = (_tanh_backward if ctx.tanh else _erf_backward)(grad, a, b)
        return grad_a, grad_b, None


def gelu_and_mul(
    x: torch.Tensor, y: torch.Tensor | None = None, approximate: str = "none"
) -> torch.Tensor:
    """gelu(x) * y; with one argument, x's last dim holds the two halves."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"approximate: expected 'none' or 'tanh', got {approximate!r}")
    a, b = split_halves(x, "gelu_and_mul") if y is None else (x, y)
    return autograd.apply(GeluAndMul, a, b, approximate == "tanh")
