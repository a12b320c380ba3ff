"""Binary arithmetic: add, sub, mul, div (true, trunc, floor), remainder, pow, maximum, minimum."""

from __future__ import annotations

from typing import Any, Final

import torch
import triton
import triton.language as tl

from gems_kernels.ops import scalar_math
from gems_kernels.ops.registering import Registration, entries, no_bool
from gems_kernels.ops.variants import variants
from gems_kernels.pointwise import PointwiseOp, pointwise_dynamic

__all__ = [
    "REGISTRATIONS",
    "add",
    "add_",
    "add_out",
    "div",
    "div_",
    "div_mode",
    "div_mode_",
    "is_floating",
    "maximum",
    "minimum",
    "mul",
    "mul_",
    "mul_out",
    "pow_scalar",
    "pow_tensor",
    "pow_tensor_",
    "remainder",
    "remainder_",
    "sub",
    "sub_",
]


def is_floating(self: Any, other: Any = 0.0, *args: Any, **kwargs: Any) -> bool:
    """Condition: every tensor operand is floating point (integer semantics stay in ATen)."""
    return all(
        not isinstance(value, torch.Tensor) or value.is_floating_point() for value in (self, other)
    )


@pointwise_dynamic(is_tensor=[True, True, False], promotions=[((0, 1), "DEFAULT")])
@triton.jit
def _add(x, y, alpha):
    return x + y * alpha


@pointwise_dynamic(is_tensor=[True, True], promotions=[((0, 1), "DEFAULT")])
@triton.jit
def _mul(x, y):
    return x * y


@pointwise_dynamic(is_tensor=[True, True], promotions=[((0, 1), "INT_TO_FLOAT")])
@triton.jit
def _true_div(x, y):
    return x / y


@pointwise_dynamic(is_tensor=[True, True], promotions=[((0, 1), "DEFAULT")])
@triton.jit
def _trunc_div(x, y):
    quotient = x / y
    return tl.where(quotient < 0, tl.ceil(quotient), tl.floor(quotient))


@pointwise_dynamic(is_tensor=[True, True], promotions=[((0, 1), "DEFAULT")])
@triton.jit
def _floor_div(x, y):
    return scalar_math.floor_divide(x, y)


@pointwise_dynamic(is_tensor=[True, True], promotions=[((0, 1), "DEFAULT")])
@triton.jit
def _remainder(x, y):
    return scalar_math.remainder(x, y)


@pointwise_dynamic(is_tensor=[True, True], promotions=[((0, 1), "DEFAULT")])
@triton.jit
def _pow(x, y):
    # exp(y * log|x|) in float32 loses about |y * log x| ulps; float64 keeps float32 results exact.
    return scalar_math.pow_float(x.to(tl.float64), y.to(tl.float64))


@pointwise_dynamic(is_tensor=[True, True], promotions=[((0, 1), "DEFAULT")])
@triton.jit
def _maximum(x, y):
    return tl.where((x > y) | (x != x), x, y)


@pointwise_dynamic(is_tensor=[True, True], promotions=[((0, 1), "DEFAULT")])
@triton.jit
def _minimum(x, y):
    return tl.where((x < y) | (x != x), x, y)


def add(self: Any, other: Any, *, alpha: Any = 1) -> torch.Tensor:
    """aten::add.Tensor / add.Scalar."""
    return _add(self, other, alpha)


def add_(self: torch.Tensor, other: Any, *, alpha: Any = 1) -> torch.Tensor:
    """aten::add_.Tensor / add_.Scalar."""
    return _add(self, other, alpha, out0=self)


def add_out(self: Any, other: Any, *, alpha: Any = 1, out: torch.Tensor) -> torch.Tensor:
    """aten::add.out."""
    return _add(self, other, alpha, out0=out)


def sub(self: Any, other: Any, *, alpha: Any = 1) -> torch.Tensor:
    """aten::sub.Tensor / sub.Scalar."""
    return _add(self, other, -alpha)


def sub_(self: torch.Tensor, other: Any, *, alpha: Any = 1) -> torch.Tensor:
    """aten::sub_.Tensor / sub_.Scalar."""
    return _add(self, other, -alpha, out0=self)


_MUL = variants(_mul)
mul, mul_, mul_out = _MUL.functional, _MUL.inplace, _MUL.out
_DIV = variants(_true_div)
div, div_ = _DIV.functional, _DIV.inplace
_REMAINDER = variants(_remainder)
remainder, remainder_ = _REMAINDER.functional, _REMAINDER.inplace
_POW = variants(_pow)
pow_tensor, pow_tensor_ = _POW.functional, _POW.inplace
maximum = variants(_maximum).functional
minimum = variants(_minimum).functional


def _divider(rounding_mode: str | None) -> PointwiseOp[torch.Tensor]:
    if rounding_mode is None:
        return _true_div
    if rounding_mode == "trunc":
        return _trunc_div
    if rounding_mode == "floor":
        return _floor_div
    raise ValueError(f"rounding_mode: expected None, 'trunc' or 'floor', got {rounding_mode!r}")


def div_mode(self: Any, other: Any, *, rounding_mode: str | None = None) -> torch.Tensor:
    """aten::div.Tensor_mode / div.Scalar_mode."""
    return _divider(rounding_mode)(self, other)


def div_mode_(self: torch.Tensor, other: Any, *, rounding_mode: str | None = None) -> torch.Tensor:
    """aten::div_.Tensor_mode / div_.Scalar_mode."""
    return _divider(rounding_mode)(self, other, out0=self)


def pow_scalar(self: Any, exponent: Any) -> torch.Tensor:
    """aten::pow.Tensor_Scalar / pow.Scalar."""
    if isinstance(self, torch.Tensor) and exponent == 2:
        return _mul(self, self)
    return _pow(self, exponent)


REGISTRATIONS: Final[tuple[Registration, ...]] = (
    *entries(add, "add.Tensor", "add.Scalar"),
    *entries(add_, "add_.Tensor", "add_.Scalar"),
    Registration("add.out", add_out),
    *entries(sub, "sub.Tensor", "sub.Scalar", condition=no_bool),
    *entries(sub_, "sub_.Tensor", "sub_.Scalar", condition=no_bool),
    *entries(mul, "mul.Tensor", "mul.Scalar"),
    *entries(mul_, "mul_.Tensor", "mul_.Scalar"),
    Registration("mul.out", mul_out),
    *entries(div, "div.Tensor", "div.Scalar"),
    *entries(div_, "div_.Tensor", "div_.Scalar"),
    *entries(div_mode, "div.Tensor_mode", "div.Scalar_mode", condition=is_floating),
    *entries(div_mode_, "div_.Tensor_mode", "div_.Scalar_mode", condition=is_floating),
    *entries(remainder, "remainder.Tensor", "remainder.Scalar", condition=is_floating),
    *entries(remainder_, "remainder_.Tensor", "remainder_.Scalar", condition=is_floating),
    *entries(pow_tensor, "pow.Tensor_Tensor", "pow.Scalar", condition=is_floating),
    Registration("pow_.Tensor", pow_tensor_, condition=is_floating),
    Registration("pow_.Scalar", pow_tensor_, condition=is_floating),
    Registration("pow.Tensor_Scalar", pow_scalar, condition=is_floating),
    Registration("maximum", maximum),
    Registration("minimum", minimum),
)
