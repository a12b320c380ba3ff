"""Element selection: where, clamp (scalar or tensor bounds), masked_fill."""

from __future__ import annotations

from typing import Any, Final

import torch
import triton
import triton.language as tl

from gems_kernels.ops.arithmetic import is_floating
from gems_kernels.ops.registering import Registration, entries
from gems_kernels.pointwise import pointwise_dynamic

__all__ = [
    "REGISTRATIONS",
    "clamp",
    "clamp_",
    "clamp_max",
    "clamp_max_",
    "clamp_max_out",
    "clamp_min",
    "clamp_min_",
    "clamp_min_out",
    "clamp_out",
    "clamp_tensor",
    "clamp_tensor_",
    "clamp_tensor_out",
    "masked_fill",
    "masked_fill_",
    "nan_to_num",
    "nan_to_num_",
    "nan_to_num_out",
    "where",
    "where_out",
]


@pointwise_dynamic(is_tensor=[True, True, True], promotions=[((1, 2), "NO_OPMATH")])
@triton.jit
def _where(condition, x, y):
    return tl.where(condition != 0, x, y)


@pointwise_dynamic(is_tensor=[True, True, True], promotions=[((0, 1, 2), "DEFAULT")])
@triton.jit
def _clamp_both(x, low, high):
    clamped = tl.minimum(tl.maximum(x, low), high)
    return tl.where(x != x, x, clamped)


@pointwise_dynamic(is_tensor=[True, True], promotions=[((0, 1), "DEFAULT")])
@triton.jit
def _clamp_min(x, low):
    return tl.where((x != x) | (x > low), x, low)


@pointwise_dynamic(is_tensor=[True, True], promotions=[((0, 1), "DEFAULT")])
@triton.jit
def _clamp_max(x, high):
    return tl.where((x != x) | (x < high), x, high)


@pointwise_dynamic(is_tensor=[True, True, True], promotions=[((0,), "NO_OPMATH")])
@triton.jit
def _masked_fill(x, mask, value):
    return tl.where(mask != 0, value, x)


@pointwise_dynamic(is_tensor=[True, False, False, False], promotions=[((0,), "DEFAULT")])
@triton.jit
def _nan_to_num(x, nan, posinf, neginf):
    result = tl.where(x != x, nan, x)
    result = tl.where(x == float("inf"), posinf, result)
    return tl.where(x == float("-inf"), neginf, result)


def where(condition: torch.Tensor, self: Any, other: Any) -> torch.Tensor:
    """aten::where.self / where.ScalarSelf / where.ScalarOther / where.Scalar."""
    return _where(condition, self, other)


def where_out(condition: torch.Tensor, self: Any, other: Any, *, out: torch.Tensor) -> torch.Tensor:
    """aten::where.self_out."""
    return _where(condition, self, other, out0=out)


def _nan_to_num_args(
    self: torch.Tensor, nan: float | None, posinf: float | None, neginf: float | None
) -> tuple[float, float, float]:
    info = torch.finfo(self.dtype)
    return (
        0.0 if nan is None else float(nan),
        info.max if posinf is None else float(posinf),
        info.min if neginf is None else float(neginf),
    )


def nan_to_num(
    self: torch.Tensor,
    nan: float | None = None,
    posinf: float | None = None,
    neginf: float | None = None,
) -> torch.Tensor:
    """aten::nan_to_num (floating inputs): NaN, +inf and -inf replaced."""
    return _nan_to_num(self, *_nan_to_num_args(self, nan, posinf, neginf))


def nan_to_num_(
    self: torch.Tensor,
    nan: float | None = None,
    posinf: float | None = None,
    neginf: float | None = None,
) -> torch.Tensor:
    """aten::nan_to_num_."""
    return _nan_to_num(self, *_nan_to_num_args(self, nan, posinf, neginf), out0=self)


def nan_to_num_out(
    self: torch.Tensor,
    nan: float | None = None,
    posinf: float | None = None,
    neginf: float | None = None,
    *,
    out: torch.Tensor,
) -> torch.Tensor:
    """aten::nan_to_num.out."""
    return _nan_to_num(self, *_nan_to_num_args(self, nan, posinf, neginf), out0=out)


def _clamp(self: torch.Tensor, low: Any, high: Any, out: torch.Tensor | None) -> torch.Tensor:
    if low is None and high is None:
        raise ValueError("clamp: at least one of 'min' and 'max' must not be None")
    if low is None:
        return _clamp_max(self, high, out0=out)
    if high is None:
        return _clamp_min(self, low, out0=out)
    return _clamp_both(self, low, high, out0=out)


def clamp(self: torch.Tensor, min: Any = None, max: Any = None) -> torch.Tensor:
    """aten::clamp (scalar bounds)."""
    return _clamp(self, min, max, None)


def clamp_(self: torch.Tensor, min: Any = None, max: Any = None) -> torch.Tensor:
    """aten::clamp_ (scalar bounds)."""
    return _clamp(self, min, max, self)


def clamp_tensor(
    self: torch.Tensor,
    min: torch.Tensor | None = None,
    max: torch.Tensor | None = None,
) -> torch.Tensor:
    """aten::clamp.Tensor."""
    return _clamp(self, min, max, None)


def masked_fill(self: torch.Tensor, mask: torch.Tensor, value: Any) -> torch.Tensor:
    """aten::masked_fill.Scalar / masked_fill.Tensor (``value`` may be a 0-d tensor)."""
    return _masked_fill(self, mask, value)


def masked_fill_(self: torch.Tensor, mask: torch.Tensor, value: Any) -> torch.Tensor:
    """aten::masked_fill_.Scalar / masked_fill_.Tensor."""
    if torch.broadcast_shapes(self.shape, mask.shape) != self.shape:
        raise RuntimeError(
            f"masked_fill_: mask of shape {tuple(mask.shape)} does not broadcast to "
            f"self of shape {tuple(self.shape)}"
        )
    return _masked_fill(self, mask, value, out0=self)


def clamp_out(
    self: torch.Tensor, min: Any = None, max: Any = None, *, out: torch.Tensor
) -> torch.Tensor:
    """aten::clamp.out."""
    return _clamp(self, min, max, out)


def clamp_tensor_(self: torch.Tensor, min: Any = None, max: Any = None) -> torch.Tensor:
    """aten::clamp_.Tensor."""
    return _clamp(self, min, max, self)


def clamp_tensor_out(
    self: torch.Tensor, min: Any = None, max: Any = None, *, out: torch.Tensor
) -> torch.Tensor:
    """aten::clamp.Tensor_out."""
    return _clamp(self, min, max, out)


def clamp_min(self: torch.Tensor, min: Any) -> torch.Tensor:
    """aten::clamp_min / clamp_min.Tensor."""
    return _clamp_min(self, min)


def clamp_min_(self: torch.Tensor, min: Any) -> torch.Tensor:
    """aten::clamp_min_ / clamp_min_.Tensor."""
    return _clamp_min(self, min, out0=self)


def clamp_min_out(self: torch.Tensor, min: Any, *, out: torch.Tensor) -> torch.Tensor:
    """aten::clamp_min.out / clamp_min.Tensor_out."""
    return _clamp_min(self, min, out0=out)


def clamp_max(self: torch.Tensor, max: Any) -> torch.Tensor:
    """aten::clamp_max / clamp_max.Tensor."""
    return _clamp_max(self, max)


def clamp_max_(self: torch.Tensor, max: Any) -> torch.Tensor:
    """aten::clamp_max_ / clamp_max_.Tensor."""
    return _clamp_max(self, max, out0=self)


def clamp_max_out(self: torch.Tensor, max: Any, *, out: torch.Tensor) -> torch.Tensor:
    """aten::clamp_max.out / clamp_max.Tensor_out."""
    return _clamp_max(self, max, out0=out)


REGISTRATIONS: Final[tuple[Registration, ...]] = (
    Registration("where.self", where),
    Registration("clamp", clamp),
    Registration("clamp_", clamp_),
    Registration("clamp.Tensor", clamp_tensor),
    Registration("clamp.out", clamp_out),
    Registration("clamp_.Tensor", clamp_tensor_),
    Registration("clamp.Tensor_out", clamp_tensor_out),
    *entries(clamp_min, "clamp_min", "clamp_min.Tensor"),
    *entries(clamp_min_, "clamp_min_", "clamp_min_.Tensor"),
    *entries(clamp_min_out, "clamp_min.out", "clamp_min.Tensor_out"),
    *entries(clamp_max, "clamp_max", "clamp_max.Tensor"),
    *entries(clamp_max_, "clamp_max_", "clamp_max_.Tensor"),
    *entries(clamp_max_out, "clamp_max.out", "clamp_max.Tensor_out"),
    Registration("where.self_out", where_out),
    Registration("nan_to_num", nan_to_num, condition=is_floating),
    Registration("nan_to_num_", nan_to_num_, condition=is_floating),
    Registration("nan_to_num.out", nan_to_num_out, condition=is_floating),
    *entries(masked_fill, "masked_fill.Scalar", "masked_fill.Tensor"),
    *entries(masked_fill_, "masked_fill_.Scalar", "masked_fill_.Tensor"),
)
