"""Activations and their backward ops: relu, gelu (none/tanh), silu, leaky_relu, sigmoid, tanh."""

from __future__ import annotations

from typing import Any, Final

import torch
import triton
import triton.language as tl

from gems_kernels.ops import scalar_math
from gems_kernels.ops.arithmetic import is_floating
from gems_kernels.ops.registering import Registration
from gems_kernels.pointwise import PointwiseOp, pointwise_dynamic

__all__ = [
    "REGISTRATIONS",
    "gelu",
    "gelu_",
    "gelu_backward",
    "leaky_relu",
    "leaky_relu_backward",
    "relu",
    "relu_",
    "sigmoid_backward",
    "silu",
    "silu_",
    "silu_backward",
    "silu_out",
    "softplus",
    "softplus_backward",
    "softplus_out",
    "tanh_backward",
    "threshold_backward",
]

_SAME = [((0,), "DEFAULT")]
_GRAD = [((0, 1), "DEFAULT")]


@pointwise_dynamic(is_tensor=[True], promotions=_SAME)
@triton.jit
def _relu(x):
    return tl.where((x > 0) | (x != x), x, 0)


@pointwise_dynamic(is_tensor=[True], promotions=_SAME)
@triton.jit
def _gelu_none(x):
    return 0.5 * x * (1.0 + scalar_math.erf(x * 0.7071067811865476))


@pointwise_dynamic(is_tensor=[True], promotions=_SAME)
@triton.jit
def _gelu_tanh(x):
    inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    return 0.5 * x * (1.0 + scalar_math.tanh(inner))


@pointwise_dynamic(is_tensor=[True, True], promotions=_GRAD)
@triton.jit
def _gelu_none_backward(grad, x):
    cdf = 0.5 * (1.0 + scalar_math.erf(x * 0.7071067811865476))
    pdf = tl.exp(-0.5 * x * x) * 0.3989422804014327
    return grad * (cdf + x * pdf)


@pointwise_dynamic(is_tensor=[True, True], promotions=_GRAD)
@triton.jit
def _gelu_tanh_backward(grad, x):
    inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    t = scalar_math.tanh(inner)
    d_inner = 0.7978845608028654 * (1.0 + 3.0 * 0.044715 * x * x)
    return grad * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * d_inner)


@pointwise_dynamic(is_tensor=[True], promotions=_SAME)
@triton.jit
def _silu(x):
    return x * scalar_math.sigmoid(x)


@pointwise_dynamic(is_tensor=[True, True], promotions=_GRAD)
@triton.jit
def _silu_backward(grad, x):
    s = scalar_math.sigmoid(x)
    return grad * s * (1.0 + x * (1.0 - s))


@pointwise_dynamic(is_tensor=[True, True], promotions=_GRAD)
@triton.jit
def _sigmoid_backward(grad, y):
    return grad * (1.0 - y) * y


@pointwise_dynamic(is_tensor=[True, True], promotions=_GRAD)
@triton.jit
def _tanh_backward(grad, y):
    return grad * (1.0 - y * y)


@pointwise_dynamic(is_tensor=[True, True, False], promotions=_GRAD)
@triton.jit
def _threshold_backward(grad, x, threshold):
    return tl.where(x <= threshold, 0.0, grad)


@pointwise_dynamic(is_tensor=[True, False], promotions=_SAME)
@triton.jit
def _leaky_relu(x, slope):
    return tl.where(x > 0, x, x * slope)


@pointwise_dynamic(is_tensor=[True, True, False], promotions=_GRAD)
@triton.jit
def _leaky_relu_backward(grad, x, slope):
    return tl.where(x > 0, grad, grad * slope)


@pointwise_dynamic(is_tensor=[True, False, False], promotions=_SAME)
@triton.jit
def _softplus(x, beta, threshold):
    scaled = x * beta
    # log1p(exp(s)) = max(s, 0) + log1p(exp(-|s|)), with log1p's small-argument correction.
    e = tl.exp(-tl.abs(scaled))
    u = 1.0 + e
    log1p = tl.where(u == 1.0, e, tl.log(u) * (e / (u - 1.0)))
    return tl.where(scaled > threshold, x, (tl.maximum(scaled, 0.0) + log1p) / beta)


@pointwise_dynamic(is_tensor=[True, True, False, False], promotions=_GRAD)
@triton.jit
def _softplus_backward(grad, x, beta, threshold):
    scaled = x * beta
    return tl.where(scaled > threshold, grad, grad * scalar_math.sigmoid(scaled))


def softplus(self: torch.Tensor, beta: Any = 1, threshold: Any = 20) -> torch.Tensor:
    """aten::softplus: log(1 + exp(beta * x)) / beta, x itself above the threshold."""
    return _softplus(self, float(beta), float(threshold))


def softplus_out(
    self: torch.Tensor, beta: Any = 1, threshold: Any = 20, *, out: torch.Tensor
) -> torch.Tensor:
    """aten::softplus.out."""
    return _softplus(self, float(beta), float(threshold), out0=out)


def softplus_backward(
    grad_output: torch.Tensor, self: torch.Tensor, beta: Any, threshold: Any
) -> torch.Tensor:
    """aten::softplus_backward: grad * sigmoid(beta * x) (grad itself above the threshold)."""
    return _softplus_backward(grad_output, self, float(beta), float(threshold))


def silu_out(self: torch.Tensor, *, out: torch.Tensor) -> torch.Tensor:
    """aten::silu.out."""
    return _silu(self, out0=out)


def relu(self: torch.Tensor) -> torch.Tensor:
    """aten::relu."""
    return _relu(self)


def relu_(self: torch.Tensor) -> torch.Tensor:
    """aten::relu_."""
    return _relu(self, out0=self)


def _gelu_kernel(approximate: str, backward: bool = False) -> PointwiseOp[torch.Tensor]:
    if approximate == "none":
        return _gelu_none_backward if backward else _gelu_none
    if approximate == "tanh":
        return _gelu_tanh_backward if backward else _gelu_tanh
    raise ValueError(f"approximate: expected 'none' or 'tanh', got {approximate!r}")


def gelu(self: torch.Tensor, *, approximate: str = "none") -> torch.Tensor:
    """aten::gelu."""
    return _gelu_kernel(approximate)(self)


def gelu_(self: torch.Tensor, *, approximate: str = "none") -> torch.Tensor:
    """aten::gelu_."""
    return _gelu_kernel(approximate)(self, out0=self)


def gelu_backward(
    grad_output: torch.Tensor, self: torch.Tensor, *, approximate: str = "none"
) -> torch.Tensor:
    """aten::gelu_backward."""
    return _gelu_kernel(approximate, backward=True)(grad_output, self)


def silu(self: torch.Tensor) -> torch.Tensor:
    """aten::silu."""
    return _silu(self)


def silu_(self: torch.Tensor) -> torch.Tensor:
    """aten::silu_."""
    return _silu(self, out0=self)


def silu_backward(grad_output: torch.Tensor, self: torch.Tensor) -> torch.Tensor:
    """aten::silu_backward."""
    return _silu_backward(grad_output, self)


def sigmoid_backward(grad_output: torch.Tensor, output: torch.Tensor) -> torch.Tensor:
    """aten::sigmoid_backward."""
    return _sigmoid_backward(grad_output, output)


def tanh_backward(grad_output: torch.Tensor, output: torch.Tensor) -> torch.Tensor:
    """aten::tanh_backward."""
    return _tanh_backward(grad_output, output)


def threshold_backward(
    grad_output: torch.Tensor, self: torch.Tensor, threshold: Any
) -> torch.Tensor:
    """aten::threshold_backward (the backward of relu)."""
    return _threshold_backward(grad_output, self, threshold)


def leaky_relu(self: torch.Tensor, negative_slope: Any = 0.01) -> torch.Tensor:
    """aten::leaky_relu."""
    return _leaky_relu(self, negative_slope)


def leaky_relu_backward(
    grad_output: torch.Tensor, self: torch.Tensor, negative_slope: Any, self_is_result: bool
) -> torch.Tensor:
    """aten::leaky_relu_backward."""
    return _leaky_relu_backward(grad_output, self, negative_slope)


REGISTRATIONS: Final[tuple[Registration, ...]] = (
    Registration("relu", relu),
    Registration("relu_", relu_),
    Registration("gelu", gelu),
    Registration("gelu_", gelu_),
    Registration("gelu_backward", gelu_backward),
    Registration("silu", silu),
    Registration("silu_", silu_),
    Registration("silu_backward", silu_backward),
    Registration("silu.out", silu_out),
    Registration("softplus", softplus, condition=is_floating),
    Registration("softplus.out", softplus_out, condition=is_floating),
    Registration("softplus_backward", softplus_backward, condition=is_floating),
    Registration("sigmoid_backward", sigmoid_backward),
    Registration("tanh_backward", tanh_backward),
    Registration("threshold_backward", threshold_backward),
    Registration("leaky_relu", leaky_relu),
    Registration("leaky_relu_backward", leaky_relu_backward),
)
