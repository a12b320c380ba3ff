"""The piecewise-linear activations of MobileNet: hardswish, hardsigmoid, hardtanh (ReLU6) and
their backward ops, with ATen's formulas and boundaries (NaN passes through the forward)."""

from __future__ import annotations

from typing import Any, Final

import torch
import triton
import triton.language as tl

from gems_kernels.ops.registering import Registration
from gems_kernels.pointwise import pointwise_dynamic

__all__ = [
    "REGISTRATIONS",
    "hardsigmoid",
    "hardsigmoid_",
    "hardsigmoid_backward",
    "hardswish",
    "hardswish_",
    "hardswish_backward",
    "hardtanh",
    "hardtanh_",
    "hardtanh_backward",
    "is_floating_activation",
]

_SAME = [((0,), "DEFAULT")]
_GRAD = [((0, 1), "DEFAULT")]


@triton.jit
def _relu6_of_shifted(x):
    """min(max(x + 3, 0), 6), NaN kept."""
    shifted = x + 3.0
    return tl.where(shifted < 0.0, 0.0, tl.where(shifted > 6.0, 6.0, shifted))


@pointwise_dynamic(is_tensor=[True], promotions=_SAME)
@triton.jit
def _hardswish(x):
    return x * _relu6_of_shifted(x) / 6.0


@pointwise_dynamic(is_tensor=[True, True], promotions=_GRAD)
@triton.jit
def _hardswish_backward(grad, x):
    # NaN takes the middle piece (a NaN gradient), as ATen's vectorised CPU kernel does.
    return tl.where(x <= -3.0, 0.0, tl.where(x >= 3.0, grad, grad * (x / 3.0 + 0.5)))


@pointwise_dynamic(is_tensor=[True], promotions=_SAME)
@triton.jit
def _hardsigmoid(x):
    return _relu6_of_shifted(x) / 6.0


@pointwise_dynamic(is_tensor=[True, True], promotions=_GRAD)
@triton.jit
def _hardsigmoid_backward(grad, x):
    return tl.where((x > -3.0) & (x < 3.0), grad / 6.0, 0.0)


@pointwise_dynamic(is_tensor=[True, False, False], promotions=_SAME)
@triton.jit
def _hardtanh(x, low, high):
    return tl.where(x < low, low, tl.where(x > high, high, x))


@pointwise_dynamic(is_tensor=[True, True, False, False], promotions=_GRAD)
@triton.jit
def _hardtanh_backward(grad, x, low, high):
    return tl.where((x <= low) | (x >= high), 0.0, grad)


def is_floating_activation(self: torch.Tensor, *args: Any, **kwargs: Any) -> bool:
    """Condition: a floating input (ATen's integer hardtanh clamps in the integer type)."""
    return self.is_floating_point()


def hardswish(self: torch.Tensor) -> torch.Tensor:
    """aten::hardswish: x * relu6(x + 3) / 6."""
    return _hardswish(self)


def hardswish_(self: torch.Tensor) -> torch.Tensor:
    """aten::hardswish_."""
    return _hardswish(self, out0=self)


def hardswish_backward(grad_output: torch.Tensor, self: torch.Tensor) -> torch.Tensor:
    """aten::hardswish_backward: 0 up to -3, grad * (x / 3 + 1/2) below 3, grad from 3."""
    return _hardswish_backward(grad_output, self)


def hardsigmoid(self: torch.Tensor) -> torch.Tensor:
    """aten::hardsigmoid: relu6(x + 3) / 6."""
    return _hardsigmoid(self)


def hardsigmoid_(self: torch.Tensor) -> torch.Tensor:
    """aten::hardsigmoid_."""
    return _hardsigmoid(self, out0=self)


def hardsigmoid_backward(grad_output: torch.Tensor, self: torch.Tensor) -> torch.Tensor:
    """aten::hardsigmoid_backward: grad / 6 strictly inside (-3, 3), else 0."""
    return _hardsigmoid_backward(grad_output, self)


def hardtanh(self: torch.Tensor, min_val: Any = -1, max_val: Any = 1) -> torch.Tensor:
    """aten::hardtanh: x clamped to [min_val, max_val] (ReLU6 is hardtanh(0, 6))."""
    return _hardtanh(self, float(min_val), float(max_val))


def hardtanh_(self: torch.Tensor, min_val: Any = -1, max_val: Any = 1) -> torch.Tensor:
    """aten::hardtanh_."""
    return _hardtanh(self, float(min_val), float(max_val), out0=self)


def hardtanh_backward(
    grad_output: torch.Tensor, self: torch.Tensor, min_val: Any, max_val: Any
) -> torch.Tensor:
    """aten::hardtanh_backward: grad strictly inside (min_val, max_val), else 0."""
    return _hardtanh_backward(grad_output, self, float(min_val), float(max_val))


# Each function implements the ATen overload of the same name.
REGISTRATIONS: Final[tuple[Registration, ...]] = tuple(
    Registration(impl.__name__, impl, condition=is_floating_activation)
    for impl in (
        hardswish, hardswish_, hardswish_backward,
        hardsigmoid, hardsigmoid_, hardsigmoid_backward,
        hardtanh, hardtanh_, hardtanh_backward,
    )
)  # fmt: skip
