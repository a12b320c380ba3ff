"""Conversions that Triton's interpreter gets wrong, written so that they are exact everywhere.

Under ``TRITON_INTERPRET=1`` a float32-to-bfloat16 cast truncates (rounds toward zero) instead of
rounding to nearest-even, and an integer-to-bfloat16 cast reinterprets the integer's low bits as
a bfloat16 pattern (1 becomes 9.2e-41). Generated pointwise kernels convert through these
functions when they run in the interpreter; compiled kernels keep the hardware conversion, which
rounds to nearest-even already.

The other kernels (matmul, convolution, norms, softmax, reductions, attention, losses, ...) write
their results through :func:`store`, which rounds the same way under the interpreter.
"""

import os

import triton
import triton.language as tl

__all__ = ["convert", "from_bfloat16", "store", "to_bfloat16", "to_float64"]

# Read once at import, like Triton itself: kernels run in the interpreter for the whole process.
_INTERPRETED: tl.constexpr = tl.constexpr(os.environ.get("TRITON_INTERPRET", "") == "1")


@triton.jit
def to_bfloat16(x):
    """``x`` (any float or integer type) rounded to the nearest bfloat16, ties to even."""
    x32 = x.to(tl.float32)
    bits = x32.to(tl.uint32, bitcast=True)
    rounded = (bits + (((bits >> 16) & 1) + 0x7FFF)) >> 16
    # NaN keeps its sign and becomes a quiet NaN instead of rounding into infinity.
    quiet = (bits >> 16) | 0x40
    half = tl.where(x32 != x32, quiet, rounded)
    return half.to(tl.uint16).to(tl.bfloat16, bitcast=True)


@triton.jit
def from_bfloat16(x):
    """bfloat16 ``x`` as float32, subnormals included (the interpreter flushes them)."""
    return (x.to(tl.uint16, bitcast=True).to(tl.uint32) << 16).to(tl.float32, bitcast=True)


@triton.jit
def convert(x, dtype: tl.constexpr):
    """``x`` converted to ``dtype``, bfloat16 both ways exactly rounded."""
    if x.dtype == dtype:
        y = x
    elif x.dtype == tl.bfloat16:
        y = from_bfloat16(x).to(dtype)
    elif dtype == tl.bfloat16:
        y = to_bfloat16(x)
    else:
        y = x.to(dtype)
    return y


@triton.jit
def store(pointer, value, mask=None):
    """``tl.store`` of ``value`` converted to the pointer's element type; a bfloat16 result is
    rounded to nearest-even under the interpreter too (compiled stores already round so)."""
    if _INTERPRETED:
        tl.store(pointer, convert(value, pointer.dtype.element_ty), mask=mask)
    else:
        tl.store(pointer, value, mask=mask)


@triton.jit
def to_float64(bits):
    """The float64 whose IEEE bit pattern is the int64 ``bits`` (Triton passes Python floats as
    float32; a float64 number travels as its bits instead)."""
    return bits.to(tl.int64).to(tl.float64, bitcast=True)
