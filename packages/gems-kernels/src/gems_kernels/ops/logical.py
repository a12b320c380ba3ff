"""Logical (any dtype, bool result) and bitwise (integer and bool) operators."""

from __future__ import annotations

from typing import Any, Final

import torch
import triton
import triton.language as tl  # noqa: F401  (Triton's interpreter needs it in the kernels' globals)

from gems_kernels.ops.registering import Registration, bitwise_entries
from gems_kernels.ops.variants import Variants, variants
from gems_kernels.pointwise import pointwise_dynamic

__all__ = [
    "BITWISE_AND",
    "BITWISE_NOT",
    "BITWISE_OR",
    "BITWISE_XOR",
    "LOGICAL_AND",
    "LOGICAL_NOT",
    "LOGICAL_OR",
    "LOGICAL_XOR",
    "REGISTRATIONS",
    "is_integral",
]


def is_integral(*args: Any, **kwargs: Any) -> bool:
    """Condition: every tensor operand holds integers or bools."""
    return all(
        not isinstance(value, torch.Tensor) or not (value.is_floating_point() or value.is_complex())
        for value in args
    )


_BOOL2 = [((0, 1), "ALWAYS_BOOL")]
_SAME2 = [((0, 1), "DEFAULT")]


@pointwise_dynamic(is_tensor=[True, True], promotions=_BOOL2)
@triton.jit
def _logical_and(x, y):
    return (x != 0) & (y != 0)


@pointwise_dynamic(is_tensor=[True, True], promotions=_BOOL2)
@triton.jit
def _logical_or(x, y):
    return (x != 0) | (y != 0)


@pointwise_dynamic(is_tensor=[True, True], promotions=_BOOL2)
@triton.jit
def _logical_xor(x, y):
    return (x != 0) ^ (y != 0)


@pointwise_dynamic(is_tensor=[True], promotions=[((0,), "ALWAYS_BOOL")])
@triton.jit
def _logical_not(x):
    return x == 0


@pointwise_dynamic(is_tensor=[True, True], promotions=_SAME2)
@triton.jit
def _bitwise_and(x, y):
    return x & y


@pointwise_dynamic(is_tensor=[True, True], promotions=_SAME2)
@triton.jit
def _bitwise_or(x, y):
    return x | y


@pointwise_dynamic(is_tensor=[True, True], promotions=_SAME2)
@triton.jit
def _bitwise_xor(x, y):
    return x ^ y


@pointwise_dynamic(is_tensor=[True], promotions=[((0,), "DEFAULT")])
@triton.jit
def _bitwise_not(x):
    return ~x


LOGICAL_AND: Variants = variants(_logical_and)
LOGICAL_OR: Variants = variants(_logical_or)
LOGICAL_XOR: Variants = variants(_logical_xor)
LOGICAL_NOT: Variants = variants(_logical_not)
BITWISE_AND: Variants = variants(_bitwise_and)
BITWISE_OR: Variants = variants(_bitwise_or)
BITWISE_XOR: Variants = variants(_bitwise_xor)
BITWISE_NOT: Variants = variants(_bitwise_not)


REGISTRATIONS: Final[tuple[Registration, ...]] = (
    Registration("logical_and", LOGICAL_AND.functional),
    Registration("logical_or", LOGICAL_OR.functional),
    Registration("logical_xor", LOGICAL_XOR.functional),
    Registration("logical_not", LOGICAL_NOT.functional),
    *bitwise_entries("bitwise_and", BITWISE_AND, is_integral),
    *bitwise_entries("bitwise_or", BITWISE_OR, is_integral),
    *bitwise_entries("bitwise_xor", BITWISE_XOR, is_integral),
    Registration("bitwise_not", BITWISE_NOT.functional, condition=is_integral),
)
