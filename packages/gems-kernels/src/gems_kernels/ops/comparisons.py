"""Comparisons: eq, ne, lt, le, gt, ge (tensor or scalar right-hand side)."""

from __future__ import annotations

from typing import Final

import triton
import triton.language as tl  # noqa: F401  (Triton's interpreter needs it in the kernels' globals)

from gems_kernels.ops.registering import Registration, binary_entries
from gems_kernels.ops.variants import Variants, variants
from gems_kernels.pointwise import pointwise_dynamic

__all__ = ["EQ", "GE", "GT", "LE", "LT", "NE", "REGISTRATIONS"]

_BOOL = [((0, 1), "ALWAYS_BOOL")]


@pointwise_dynamic(is_tensor=[True, True], promotions=_BOOL)
@triton.jit
def _eq(x, y):
    return x == y


@pointwise_dynamic(is_tensor=[True, True], promotions=_BOOL)
@triton.jit
def _ne(x, y):
    return x != y


@pointwise_dynamic(is_tensor=[True, True], promotions=_BOOL)
@triton.jit
def _lt(x, y):
    return x < y


@pointwise_dynamic(is_tensor=[True, True], promotions=_BOOL)
@triton.jit
def _le(x, y):
    return x <= y


@pointwise_dynamic(is_tensor=[True, True], promotions=_BOOL)
@triton.jit
def _gt(x, y):
    return x > y


@pointwise_dynamic(is_tensor=[True, True], promotions=_BOOL)
@triton.jit
def _ge(x, y):
    return x >= y


EQ: Variants = variants(_eq)
NE: Variants = variants(_ne)
LT: Variants = variants(_lt)
LE: Variants = variants(_le)
GT: Variants = variants(_gt)
GE: Variants = variants(_ge)


REGISTRATIONS: Final[tuple[Registration, ...]] = (
    *binary_entries("eq", EQ),
    *binary_entries("ne", NE),
    *binary_entries("lt", LT),
    *binary_entries("le", LE),
    *binary_entries("gt", GT),
    *binary_entries("ge", GE),
)
