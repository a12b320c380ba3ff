"""Three-operand pointwise ops of optimizers: addcmul, addcdiv and lerp (functional, in-place
and ``out=``)."""

from __future__ import annotations

from typing import Any, Final

import torch
import triton
import triton.language as tl

from gems_kernels.ops.registering import Registration, all_floating, entries
from gems_kernels.pointwise import pointwise_dynamic

__all__ = [
    "REGISTRATIONS",
    "addcdiv",
    "addcdiv_",
    "addcdiv_out",
    "addcmul",
    "addcmul_",
    "addcmul_out",
    "lerp",
    "lerp_",
    "lerp_out",
]

_THREE = [((0, 1, 2), "DEFAULT")]


@pointwise_dynamic(is_tensor=[True, True, True, False], promotions=_THREE)
@triton.jit
def _addcmul(x, t1, t2, value):
    return x + value * t1 * t2


@pointwise_dynamic(is_tensor=[True, True, True, False], promotions=_THREE)
@triton.jit
def _addcdiv(x, t1, t2, value):
    return x + value * (t1 / t2)


@pointwise_dynamic(is_tensor=[True, True, True], promotions=_THREE)
@triton.jit
def _lerp(x, end, weight):
    # ATen's formula (one fused multiply-add from the nearer end): exact at weight 0 and 1.
    small = tl.abs(weight) < 0.5
    coefficient = tl.where(small, weight, weight - 1.0)
    return tl.fma(coefficient, end - x, tl.where(small, x, end))


def addcmul(self: Any, tensor1: Any, tensor2: Any, *, value: Any = 1) -> torch.Tensor:
    """aten::addcmul: self + value * tensor1 * tensor2."""
    return _addcmul(self, tensor1, tensor2, value)


def addcmul_(self: torch.Tensor, tensor1: Any, tensor2: Any, *, value: Any = 1) -> torch.Tensor:
    """aten::addcmul_."""
    return _addcmul(self, tensor1, tensor2, value, out0=self)


def addcmul_out(
    self: Any, tensor1: Any, tensor2: Any, *, value: Any = 1, out: torch.Tensor
) -> torch.Tensor:
    """aten::addcmul.out."""
    return _addcmul(self, tensor1, tensor2, value, out0=out)


def addcdiv(self: Any, tensor1: Any, tensor2: Any, *, value: Any = 1) -> torch.Tensor:
    """aten::addcdiv: self + value * tensor1 / tensor2."""
    return _addcdiv(self, tensor1, tensor2, value)


def addcdiv_(self: torch.Tensor, tensor1: Any, tensor2: Any, *, value: Any = 1) -> torch.Tensor:
    """aten::addcdiv_."""
    return _addcdiv(self, tensor1, tensor2, value, out0=self)


def addcdiv_out(
    self: Any, tensor1: Any, tensor2: Any, *, value: Any = 1, out: torch.Tensor
) -> torch.Tensor:
    """aten::addcdiv.out."""
    return _addcdiv(self, tensor1, tensor2, value, out0=out)


def lerp(self: Any, end: Any, weight: Any) -> torch.Tensor:
    """aten::lerp.Scalar / lerp.Tensor: self + weight * (end - self)."""
    return _lerp(self, end, weight)


def lerp_(self: torch.Tensor, end: Any, weight: Any) -> torch.Tensor:
    """aten::lerp_.Scalar / lerp_.Tensor."""
    return _lerp(self, end, weight, out0=self)


def lerp_out(self: Any, end: Any, weight: Any, *, out: torch.Tensor) -> torch.Tensor:
    """aten::lerp.Scalar_out / lerp.Tensor_out."""
    return _lerp(self, end, weight, out0=out)


REGISTRATIONS: Final[tuple[Registration, ...]] = (
    Registration("addcmul", addcmul, condition=all_floating),
    Registration("addcmul_", addcmul_, condition=all_floating),
    Registration("addcmul.out", addcmul_out, condition=all_floating),
    Registration("addcdiv", addcdiv, condition=all_floating),
    Registration("addcdiv_", addcdiv_, condition=all_floating),
    Registration("addcdiv.out", addcdiv_out, condition=all_floating),
    *entries(lerp, "lerp.Scalar", "lerp.Tensor", condition=all_floating),
    *entries(lerp_, "lerp_.Scalar", "lerp_.Tensor", condition=all_floating),
    *entries(lerp_out, "lerp.Scalar_out", "lerp.Tensor_out", condition=all_floating),
)
