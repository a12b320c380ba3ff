"""Element functions shared by several kernels, written with ``tl.math`` only.

``libdevice`` is not available in Triton's interpreter, so functions it would provide are
expressed here through ``exp``/``log`` and friends; all take and return float32 or float64.
"""

import triton
import triton.language as tl

__all__ = ["erf", "expm1", "floor_divide", "pow_float", "remainder", "sigmoid", "tanh"]


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
    return tl.where(u == 1.0, x, tl.where(u_minus_1 == -1.0, -1.0, u_minus_1 * x / tl.log(u)))


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
    """base ** exponent with C's ``pow`` semantics for zeros (signed), infinities, NaN, negative
    bases and integer exponents."""
    magnitude = tl.exp(exponent * tl.log(tl.abs(base)))
    is_integer = tl.floor(exponent) == exponent
    is_odd = is_integer & (tl.abs(exponent - 2.0 * tl.floor(exponent * 0.5)) == 1.0)
    # -0.0 counts as negative: (-0.0) ** 3 is -0.0 and (-0.0) ** -3 is -inf.
    negative = (base < 0) | ((base == 0) & (1.0 / base < 0))
    signed = tl.where(negative & is_odd, -magnitude, magnitude)
    finite_negative = (base < 0) & (base != float("-inf"))
    result = tl.where(finite_negative & (~is_integer), float("nan"), signed)
    one = (base == 1.0) | ((tl.abs(base) == 1.0) & (tl.abs(exponent) == float("inf")))
    return tl.where((exponent == 0) | one, 1.0, result)


@triton.jit
def floor_divide(x, y):
    """Python's x // y for floats, as ATen computes it: (x - fmod(x, y)) / y, corrected to the
    floor and rounded to the nearest integer."""
    mod = x % y
    quotient = (x - mod) / y
    quotient = tl.where((mod != 0) & ((y < 0) != (mod < 0)), quotient - 1.0, quotient)
    floored = tl.floor(quotient)
    floored = tl.where(quotient - floored > 0.5, floored + 1.0, floored)
    signed_zero = tl.where((x / y) < 0, -0.0, 0.0)
    return tl.where(y == 0, x / y, tl.where(quotient != 0, floored, signed_zero))


@triton.jit
def remainder(x, y):
    """Python's x % y for floats (the sign of y), as ATen computes it from fmod."""
    mod = x % y
    return tl.where((mod != 0) & ((y < 0) != (mod < 0)), mod + y, mod)
