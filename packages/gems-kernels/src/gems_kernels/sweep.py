"""Special-value sweep: every unary and binary pointwise op over the inputs random samples miss.

Inputs per dtype: tiny and huge magnitudes, values near 0 and near 1, both zeros, subnormals,
infinities, NaN and integer-valued floats (every pair of them for binary ops). Each result is
measured in units in the last place (ULPs) of its dtype against ATen computing in float64 on the
upcast inputs, for gems (under ``use_gems``) and for ATen itself on the same dtype. A result that
equals the float64 reference rounded to the dtype (infinities and overflow included), or is NaN
where the reference is NaN, counts 0 ULPs; a NaN or infinity where the reference has none counts
infinitely many. Where the float64 formula of gelu or silu gives NaN at an infinity
(``gelu(-inf)`` is -inf * 0), NaN and the limit both count as exact; floor division and
remainder also count as exact when they match the float64 formula with the quotient rounded to
the dtype. ``BUDGETS`` holds the ULP budget per op
and dtype; it judges gems only. ATen's error in the same dtype is reported as information: it
depends on the host CPU (``ATEN_CPU_CAPABILITY``), so it is never a pass condition.

``python -m gems_kernels.sweep`` prints the table (under ``TRITON_INTERPRET=1`` on a CPU).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import torch
import torch.nn.functional as F

__all__ = [
    "BINARY",
    "BUDGETS",
    "DTYPES",
    "UNARY",
    "Measurement",
    "SweepOp",
    "binary_inputs",
    "budget",
    "measure",
    "reference",
    "shape_variants",
    "special_values",
    "ulp_error",
]

DTYPES: Final = (torch.float32, torch.float16, torch.bfloat16, torch.float64)
# Mantissa bits and the exponent of the smallest normal number, per dtype.
_FORMATS: Final[Mapping[torch.dtype, tuple[int, int]]] = {
    torch.float64: (52, -1022),
    torch.float32: (23, -126),
    torch.float16: (10, -14),
    torch.bfloat16: (7, -126),
}


@dataclass(frozen=True)
class SweepOp:
    """An op under the sweep: its name, the call and the ATen overloads it reaches."""

    name: str
    fn: Callable[..., torch.Tensor]
    arity: int
    # Default ULP budget for every dtype; ``BUDGETS`` overrides it per dtype.
    budget: float = 1.0
    # Discontinuous ops (floor division, remainder): a result counts as exact when it matches
    # either the float64 reference or ``rounded`` (the same formula in float64 with x / y first
    # rounded to the dtype, as ATen does in half precision).
    exact: bool = False
    # The float64 reference when it is not ``fn`` itself on the upcast inputs.
    reference: Callable[..., torch.Tensor] | None = None
    # For ``exact`` ops: (x, y, dtype) -> the float64 result with the quotient rounded to dtype.
    rounded: Callable[[torch.Tensor, torch.Tensor, torch.dtype], torch.Tensor] | None = None
    # Whether the limit at an infinity also counts as exact where the float64 formula is NaN.
    limits: bool = False


def _unary(
    name: str,
    fn: Callable[[torch.Tensor], torch.Tensor],
    budget: float = 1.0,
    limits: bool = False,
) -> SweepOp:
    return SweepOp(name, fn, 1, budget, limits=limits)


def _binary(
    name: str,
    fn: Callable[..., torch.Tensor],
    budget: float = 1.0,
    exact: bool = False,
    reference: Callable[..., torch.Tensor] | None = None,
    rounded: Callable[[torch.Tensor, torch.Tensor, torch.dtype], torch.Tensor] | None = None,
) -> SweepOp:
    return SweepOp(name, fn, 2, budget, exact, reference, rounded)


def _rounded_quotient(x: torch.Tensor, y: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """x / y in float64, rounded to ``dtype`` and back (ATen's half-precision division)."""
    return (x / y).to(dtype).to(torch.float64)


def _rounded_remainder(x: torch.Tensor, y: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """x - y * floor(x / y) with the quotient rounded to ``dtype`` (ATen's CPU formula)."""
    return x - y * torch.floor(_rounded_quotient(x, y, dtype))


def _python_remainder(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Python's float ``x % y`` (C's fmod, moved to the sign of y). ATen's CPU kernels compute
    x - y * floor(x / y) (and fmod likewise), which is NaN where x / y overflows (a subnormal y)."""
    import numpy as np  # Triton's interpreter needs it anyway; only this reference uses it here

    with np.errstate(invalid="ignore"):  # fmod(inf, y) and fmod(x, 0) are NaN, as intended
        mod = torch.from_numpy(np.fmod(x.numpy(), y.numpy()))
    return torch.where((mod != 0) & ((y < 0) != (mod < 0)), mod + y, mod)


UNARY: Final[tuple[SweepOp, ...]] = (
    _unary("abs", torch.abs, 0),
    _unary("neg", torch.neg, 0),
    _unary("floor", torch.floor, 0),
    _unary("ceil", torch.ceil, 0),
    _unary("exp", torch.exp),
    _unary("exp2", torch.exp2),
    _unary("log", torch.log),
    _unary("log2", torch.log2),
    _unary("log1p", torch.log1p),
    _unary("sqrt", torch.sqrt),
    _unary("rsqrt", torch.rsqrt),
    _unary("sin", torch.sin),
    _unary("cos", torch.cos),
    _unary("erf", torch.erf),
    _unary("tanh", torch.tanh),
    _unary("sigmoid", torch.sigmoid),
    _unary("reciprocal", torch.reciprocal),
    _unary("relu", torch.relu, 0),
    _unary("gelu", F.gelu, 2, limits=True),
    _unary("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"), 2, limits=True),
    _unary("silu", F.silu, 2, limits=True),
    _unary("leaky_relu", F.leaky_relu),
    _unary("isnan", torch.isnan, 0),
    _unary("isinf", torch.isinf, 0),
    _unary("isfinite", torch.isfinite, 0),
)
BINARY: Final[tuple[SweepOp, ...]] = (
    _binary("add", torch.add),
    _binary("add_alpha", lambda x, y: torch.add(x, y, alpha=0.5)),
    _binary("sub", torch.sub),
    _binary("mul", torch.mul),
    _binary("div", torch.div),
    _binary(
        "div_floor",
        lambda x, y: torch.div(x, y, rounding_mode="floor"),
        0,
        exact=True,
        rounded=lambda x, y, dtype: torch.floor(_rounded_quotient(x, y, dtype)),
    ),
    _binary(
        "div_trunc",
        lambda x, y: torch.div(x, y, rounding_mode="trunc"),
        0,
        exact=True,
        rounded=lambda x, y, dtype: torch.trunc(_rounded_quotient(x, y, dtype)),
    ),
    _binary(
        "remainder",
        torch.remainder,
        0,
        exact=True,
        reference=_python_remainder,
        rounded=_rounded_remainder,
    ),
    _binary("pow", torch.pow),
    _binary("maximum", torch.maximum, 0),
    _binary("minimum", torch.minimum, 0),
    _binary("eq", torch.eq, 0),
    _binary("lt", torch.lt, 0),
    _binary("ge", torch.ge, 0),
    _binary("where", lambda x, y: torch.where(x > y, x, y), 0),
    _binary("clamp_min", lambda x, y: torch.clamp(x, min=y), 0),
)

# Per (op, dtype) budgets that differ from the op's default. ATen's own error is reported beside
# gems' but never judged: it depends on the host CPU (``ATEN_CPU_CAPABILITY``; on an AVX512 Xeon
# ATen's float16 gelu(inf) is NaN, on AVX2 it is not). Large ones come from results in the
# subnormal range (sigmoid and silu of -100), from cancellation that ATen's formula shares
# (gelu's 1 + erf and 1 + tanh near -3), and, for float32 exp/log/tanh, from NumPy's float32
# exp and log under the interpreter.
BUDGETS: Final[Mapping[tuple[str, torch.dtype], float]] = {
    ("exp", torch.float32): 2,
    ("log", torch.float32): 2,
    ("erf", torch.float16): 2,
    ("erf", torch.bfloat16): 256,
    ("tanh", torch.float32): 3,
    ("tanh", torch.float64): 2,
    ("sigmoid", torch.float32): 32,
    ("gelu", torch.float32): 16,
    ("gelu_tanh", torch.float32): 256,
    ("gelu_tanh", torch.float64): 2048,
    ("silu", torch.float32): 4096,
    ("pow", torch.float64): 1024,
}


def special_values(dtype: torch.dtype) -> torch.Tensor:
    """The sweep's inputs for ``dtype``: both signs of each magnitude class."""
    info = torch.finfo(dtype)
    subnormal = info.smallest_normal * info.eps
    magnitudes = [
        0.0,
        subnormal,
        info.smallest_normal / 2,
        info.smallest_normal,
        info.tiny * 3,
        1e-30,
        1e-8,
        1e-4,
        0.1,
        0.5,
        1.0 - info.eps,
        1.0,
        1.0 + info.eps,
        1.001,
        1.5,
        2.0,
        3.0,
        math.pi,
        10.0,
        100.0,
        1e4,
        1e30,
        info.max / 2,
        math.inf,
    ]
    values = torch.tensor(magnitudes, dtype=torch.float64).to(dtype)
    return torch.cat([values, -values, torch.tensor([math.nan], dtype=dtype)])


def binary_inputs(dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """Every pair of special values, as two 1-d tensors."""
    values = special_values(dtype)
    x, y = torch.meshgrid(values, values, indexing="ij")
    return x.reshape(-1), y.reshape(-1)


def shape_variants(x: torch.Tensor) -> list[tuple[str, torch.Tensor]]:
    """``x``'s values laid out as shapes samples rarely hit: 0-d, empty, one element and a
    non-contiguous (transposed, then sliced) view."""
    square = x[: (x.numel() // 4) * 4].reshape(4, -1)
    return [
        ("0-d", x[1].clone().reshape(())),
        ("empty", x[:0].reshape(0, 3)),
        ("one", x[1:2].clone()),
        ("non-contiguous", square.t()[::2]),
    ]


def _ulp(reference: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The spacing of ``dtype`` numbers at each float64 ``reference`` value."""
    mantissa, min_exponent = _FORMATS[dtype]
    _, exponent = torch.frexp(reference)
    exponent = torch.clamp(exponent.to(torch.float64) - 1, min=min_exponent)
    return torch.exp2(exponent - mantissa)


def ulp_error(actual: torch.Tensor, reference: torch.Tensor) -> torch.Tensor:
    """Per element, |actual - reference| in ULPs of ``actual``'s dtype (see the module)."""
    if not actual.is_floating_point():
        differs = actual.to(torch.float64) != reference.to(torch.float64)
        return torch.where(differs, math.inf, 0.0)
    value = actual.to(torch.float64)
    rounded = reference.to(actual.dtype).to(torch.float64)
    same = (value == rounded) | (value.isnan() & reference.isnan())
    error = (value - reference).abs() / _ulp(reference, actual.dtype)
    error = torch.where(value.isfinite() & reference.isfinite(), error, math.inf)
    return torch.where(same, 0.0, error)


@dataclass(frozen=True)
class Measurement:
    """Largest ULP errors of one op in one dtype against the float64 reference, and the input of
    each one's largest error (``None`` when that error is 0). Only gems' error is judged; ATen's
    is information (it depends on the host CPU)."""

    op: str
    dtype: torch.dtype
    gems: float
    aten: float
    budget: float
    worst_input: tuple[float, ...] | None
    aten_worst_input: tuple[float, ...] | None

    @property
    def passes(self) -> bool:
        """Whether gems stays within the budget."""
        return self.gems <= self.budget


def budget(op: SweepOp, dtype: torch.dtype) -> float:
    """The ULP budget of ``op`` in ``dtype``."""
    return BUDGETS.get((op.name, dtype), op.budget)


def _inputs(op: SweepOp, dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    return (special_values(dtype),) if op.arity == 1 else binary_inputs(dtype)


def reference(op: SweepOp, inputs: Sequence[torch.Tensor]) -> torch.Tensor:
    """``op`` in float64 on the upcast ``inputs``; never the host ATen in the inputs' dtype."""
    return (op.reference or op.fn)(*(x.to(torch.float64) for x in inputs))


def _limit(op: SweepOp, inputs: Sequence[torch.Tensor]) -> torch.Tensor:
    """A ``limits`` op at the largest finite float64 of each infinity's sign: its limit there
    (gelu(-inf) = 0, where the float64 formula is -inf * 0 = NaN)."""
    top = torch.finfo(torch.float64).max
    return (op.reference or op.fn)(*(x.to(torch.float64).clamp(-top, top) for x in inputs))


def _worst(error: torch.Tensor, inputs: Sequence[torch.Tensor]) -> tuple[float, ...] | None:
    if error.numel() == 0 or float(error.max()) == 0:
        return None
    worst = int(torch.argmax(torch.nan_to_num(error, posinf=1e300)))
    return tuple(float(x[worst]) for x in inputs)


def errors(op: SweepOp, inputs: Sequence[torch.Tensor], actual: torch.Tensor) -> torch.Tensor:
    """Per element, ``actual``'s ULP error against the float64 reference of ``op``."""
    expected = reference(op, inputs)
    error = ulp_error(actual, expected)
    if op.limits:
        error = torch.minimum(error, ulp_error(actual, _limit(op, inputs)))
    if op.exact and op.rounded is not None:
        x, y = (t.to(torch.float64) for t in inputs)
        error = torch.minimum(error, ulp_error(actual, op.rounded(x, y, actual.dtype)))
    return error


def measure(op: SweepOp, dtype: torch.dtype) -> Measurement:
    """Run ``op`` on the special values in ``dtype`` under gems and under ATen."""
    from gems_kernels.dispatch import use_gems

    inputs = _inputs(op, dtype)
    native = op.fn(*inputs)
    with use_gems():
        actual = op.fn(*inputs)
    if actual.dtype != native.dtype or actual.shape != native.shape:
        raise AssertionError(
            f"{op.name} {dtype}: gems gives {actual.dtype} {tuple(actual.shape)}, "
            f"ATen {native.dtype} {tuple(native.shape)}"
        )
    gems_error = errors(op, inputs, actual)
    aten_error = errors(op, inputs, native)
    return Measurement(
        op=op.name,
        dtype=dtype,
        gems=float(gems_error.max()),
        aten=float(aten_error.max()),
        budget=budget(op, dtype),
        worst_input=_worst(gems_error, inputs),
        aten_worst_input=_worst(aten_error, inputs),
    )


def _table(measurements: Sequence[Measurement]) -> str:
    lines = [
        f"{'op':<12} {'dtype':<9} {'gems':>8} {'ATen':>8} {'budget':>7}  "
        "worst input (gems) / (ATen, information only)"
    ]
    for m in measurements:
        flag = "" if m.passes else "  OVER"
        lines.append(
            f"{m.op:<12} {str(m.dtype).removeprefix('torch.'):<9} {m.gems:>8.3g} {m.aten:>8.3g} "
            f"{m.budget:>7.3g}  {m.worst_input} / {m.aten_worst_input}{flag}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Print the sweep's table; exit status 1 when an op exceeds its budget."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", nargs="*", help="only these ops")
    args = parser.parse_args(argv)
    ops = [op for op in (*UNARY, *BINARY) if not args.ops or op.name in args.ops]
    measurements = [measure(op, dtype) for op in ops for dtype in DTYPES]
    print(_table(measurements))
    return 0 if all(m.passes for m in measurements) else 1


if __name__ == "__main__":
    raise SystemExit(main())
