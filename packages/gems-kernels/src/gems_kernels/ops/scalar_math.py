"""Element functions shared by several kernels, written with ``tl.math`` only.

``libdevice`` is not available in Triton's interpreter, so functions it would provide are
expressed here through ``exp``/``log`` and friends; all take and return float32 or float64.
"""

import triton  # type: ignore[import-untyped]
import triton.language as tl  # type: ignore[import-untyped]

__all__ = ["erf", "expm1", "pow_float", "sigmoid", "tanh"]


@triton.jit
def sigmoid(x):
    """1 / (1 + exp(-x))."""
    return 1.0 / (1.0 + tl.exp(-x))


@triton.jit
def expm1(x):
    """exp(x) - 1 without cancellation near 0 (Kahan: the rounding error of exp(x) cancels in
    (u - 1) * x / log(u))."""
    u = tl.exp(x)
    u_minus_1 = u - 1.0
    return tl.where(
        u == 1.0, x, tl.where(u_minus_1 == -1.0, -1.0, u_minus_1 * x / tl.log(u))
    )


@triton.jit
def tanh(x):
    """tanh(x) = -expm1(-2|x|) / (2 + expm1(-2|x|)), signed; exact for tiny |x| and -0.0."""
    e = expm1(-2.0 * tl.abs(x))
    t = -e / (2.0 + e)
    return tl.where(x == 0, x, tl.where(x < 0, -t, t))


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
