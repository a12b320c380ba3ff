"""Unary math: abs, neg, exp, log, sqrt, rsqrt, sin, cos, erf, tanh, sigmoid, reciprocal, ..."""

from __future__ import annotations

from typing import Final

import triton
import triton.language as tl

from gems_kernels.ops import scalar_math
from gems_kernels.ops.arithmetic import is_floating
from gems_kernels.ops.registering import Registration, no_bool, pointwise_entries
from gems_kernels.ops.variants import Variants, variants
from gems_kernels.pointwise import pointwise_dynamic

__all__ = [
    "ABS",
    "CEIL",
    "COS",
    "ERF",
    "EXP",
    "EXP2",
    "FLOOR",
    "ISFINITE",
    "ISINF",
    "ISNAN",
    "LOG",
    "LOG1P",
    "LOG2",
    "NEG",
    "RECIPROCAL",
    "REGISTRATIONS",
    "RSQRT",
    "SIGMOID",
    "SIN",
    "SQRT",
    "TANH",
]

_SAME = [((0,), "DEFAULT")]
_FLOAT = [((0,), "INT_TO_FLOAT")]
_BOOL = [((0,), "ALWAYS_BOOL")]


@pointwise_dynamic(is_tensor=[True], promotions=_SAME)
@triton.jit
def _abs(x):
    return tl.where(x < 0, -x, x)


@pointwise_dynamic(is_tensor=[True], promotions=_SAME)
@triton.jit
def _neg(x):
    return -x


@pointwise_dynamic(is_tensor=[True], promotions=_SAME)
@triton.jit
def _floor(x):
    return tl.floor(x)


@pointwise_dynamic(is_tensor=[True], promotions=_SAME)
@triton.jit
def _ceil(x):
    return tl.ceil(x)


@pointwise_dynamic(is_tensor=[True], promotions=_FLOAT)
@triton.jit
def _exp(x):
    return tl.exp(x)


@pointwise_dynamic(is_tensor=[True], promotions=_FLOAT)
@triton.jit
def _exp2(x):
    return tl.exp2(x)


@pointwise_dynamic(is_tensor=[True], promotions=_FLOAT)
@triton.jit
def _log(x):
    return tl.log(x)


@pointwise_dynamic(is_tensor=[True], promotions=_FLOAT)
@triton.jit
def _log2(x):
    return tl.log2(x)


@pointwise_dynamic(is_tensor=[True], promotions=_FLOAT)
@triton.jit
def _log1p(x):
    # log(1 + x) loses digits for tiny x; the correction term restores them.
    u = 1.0 + x
    return tl.where((u == 1.0) | (u == float("inf")), x, tl.log(u) * (x / (u - 1.0)))


@pointwise_dynamic(is_tensor=[True], promotions=_FLOAT)
@triton.jit
def _sqrt(x):
    return tl.sqrt(x)


@pointwise_dynamic(is_tensor=[True], promotions=_FLOAT)
@triton.jit
def _rsqrt(x):
    return tl.rsqrt(x)


@pointwise_dynamic(is_tensor=[True], promotions=_FLOAT)
@triton.jit
def _sin(x):
    return tl.sin(x)


@pointwise_dynamic(is_tensor=[True], promotions=_FLOAT)
@triton.jit
def _cos(x):
    return tl.cos(x)


@pointwise_dynamic(is_tensor=[True], promotions=_FLOAT)
@triton.jit
def _erf(x):
    return scalar_math.erf(x)


@pointwise_dynamic(is_tensor=[True], promotions=_FLOAT)
@triton.jit
def _tanh(x):
    return scalar_math.tanh(x)


@pointwise_dynamic(is_tensor=[True], promotions=_FLOAT)
@triton.jit
def _sigmoid(x):
    return scalar_math.sigmoid(x)


@pointwise_dynamic(is_tensor=[True], promotions=_FLOAT)
@triton.jit
def _reciprocal(x):
    return 1.0 / x


@pointwise_dynamic(is_tensor=[True], promotions=_BOOL)
@triton.jit
def _isnan(x):
    return x != x


@pointwise_dynamic(is_tensor=[True], promotions=_BOOL)
@triton.jit
def _isinf(x):
    return tl.abs(x) == float("inf")


@pointwise_dynamic(is_tensor=[True], promotions=_BOOL)
@triton.jit
def _isneginf(x):
    return x == float("-inf")


@pointwise_dynamic(is_tensor=[True], promotions=_BOOL)
@triton.jit
def _isposinf(x):
    return x == float("inf")


@pointwise_dynamic(is_tensor=[True], promotions=_BOOL)
@triton.jit
def _isfinite(x):
    return (x == x) & (tl.abs(x) != float("inf"))


ABS: Variants = variants(_abs)
NEG: Variants = variants(_neg)
FLOOR: Variants = variants(_floor)
CEIL: Variants = variants(_ceil)
EXP: Variants = variants(_exp)
EXP2: Variants = variants(_exp2)
LOG: Variants = variants(_log)
LOG2: Variants = variants(_log2)
LOG1P: Variants = variants(_log1p)
SQRT: Variants = variants(_sqrt)
RSQRT: Variants = variants(_rsqrt)
SIN: Variants = variants(_sin)
COS: Variants = variants(_cos)
ERF: Variants = variants(_erf)
TANH: Variants = variants(_tanh)
SIGMOID: Variants = variants(_sigmoid)
RECIPROCAL: Variants = variants(_reciprocal)
ISNAN: Variants = variants(_isnan)
ISINF: Variants = variants(_isinf)
ISNEGINF: Variants = variants(_isneginf)
ISPOSINF: Variants = variants(_isposinf)
ISFINITE: Variants = variants(_isfinite)


REGISTRATIONS: Final[tuple[Registration, ...]] = (
    *pointwise_entries("abs", ABS, condition=no_bool),
    *pointwise_entries("neg", NEG, condition=no_bool),
    *pointwise_entries("floor", FLOOR, condition=is_floating),
    *pointwise_entries("ceil", CEIL, condition=is_floating),
    *pointwise_entries("exp", EXP),
    *pointwise_entries("exp2", EXP2),
    *pointwise_entries("log", LOG),
    *pointwise_entries("log2", LOG2),
    *pointwise_entries("log1p", LOG1P),
    *pointwise_entries("sqrt", SQRT),
    *pointwise_entries("rsqrt", RSQRT),
    *pointwise_entries("sin", SIN),
    *pointwise_entries("cos", COS),
    *pointwise_entries("erf", ERF),
    *pointwise_entries("tanh", TANH),
    *pointwise_entries("sigmoid", SIGMOID),
    *pointwise_entries("reciprocal", RECIPROCAL),
    Registration("isnan", ISNAN.functional),
    Registration("isinf", ISINF.functional),
    # SDPA's math path (dropout on) finds the fully masked rows with isneginf.
    Registration("isneginf", ISNEGINF.functional, condition=is_floating),
    Registration("isposinf", ISPOSINF.functional, condition=is_floating),
    # isfinite is a composite: at the autograd key it runs as one kernel.
    Registration("isfinite", ISFINITE.functional, condition=is_floating, autograd=True),
)
