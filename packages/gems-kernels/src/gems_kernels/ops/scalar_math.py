"""Element functions shared by several kernels, written with ``tl.math`` only.

``libdevice`` is not available in Triton's interpreter, so functions it would provide are
expressed here through ``exp``/``log`` and friends; all take and return float32 or float64.
"""

import triton  # type: ignore[import-untyped]
import triton.language as tl  # type: ignore[import-untyped]

__all__ = ["erf", "pow_float", "sigmoid", "tanh"]


@triton.jit
def sigmoid(x):
    """1 / (1 + exp(-x))."""
    return 1.0 / (1.0 + tl.exp(-x))


@triton.jit
def tanh(x):
    """tanh(x) = 2 sigmoid(2x) - 1, computed on |x| to avoid overflow."""
    magnitude = tl.abs(x)
    e = tl.exp(-2.0 * magnitude)
    t = (1.0 - e) / (1.0 + e)
    return tl.where(x < 0, -t, t)


@triton.jit
def erf(x):
    """The error function."""
    return tl.math.erf(x)


@triton.jit
def pow_float(base, exponent):
    """base ** exponent with IEEE semantics for zero, negative bases and integer exponents."""
    magnitude = tl.exp(exponent * tl.log(tl.abs(base)))
    is_integer = tl.floor(exponent) == exponent
    is_odd = is_integer & (tl.abs(exponent - 2.0 * tl.floor(exponent * 0.5)) == 1.0)
    signed = tl.where((base < 0) & is_odd, -magnitude, magnitude)
    result = tl.where((base < 0) & (~is_integer), float("nan"), signed)
    result = tl.where(
        base == 0, tl.where(exponent > 0, 0.0, tl.where(exponent == 0, 1.0, float("inf"))), result
    )
    return tl.where(exponent == 0, 1.0, result)
