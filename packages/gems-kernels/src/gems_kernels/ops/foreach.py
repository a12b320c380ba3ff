"""The ``_foreach_*`` ops of optimizers and gradient clipping: a gems kernel per tensor of the
list.

Each op applies one gems pointwise function (or the vector norm) to the i-th element of every
list argument, with the other arguments shared; in-place forms write into ``self``'s tensors and
return nothing. One launch per tensor: there is no multi-tensor kernel yet.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

import torch

from gems_kernels.ops import arithmetic, norms, ternary, unary_math
from gems_kernels.ops.registering import Registration, all_floating

__all__ = ["FOREACH", "REGISTRATIONS", "foreach_norm"]


def _rows(args: Sequence[Any]) -> list[list[Any]]:
    """The per-tensor argument lists: list arguments zipped, the others repeated."""
    count = len(args[0])
    for arg in args[1:]:
        if isinstance(arg, (list, tuple)) and len(arg) != count:
            raise RuntimeError(
                f"_foreach: tensor lists must have the same length, got {count} and {len(arg)}"
            )
    return [[a[i] if isinstance(a, (list, tuple)) else a for a in args] for i in range(count)]


def _functional(per_tensor: Callable[..., torch.Tensor]) -> Callable[..., list[torch.Tensor]]:
    def run(*args: Any, **kwargs: Any) -> list[torch.Tensor]:
        return [per_tensor(*row, **kwargs) for row in _rows(args)]

    return run


def _inplace(per_tensor: Callable[..., torch.Tensor]) -> Callable[..., None]:
    def run(*args: Any, **kwargs: Any) -> None:
        for row in _rows(args):
            per_tensor(*row, **kwargs)

    return run


def foreach_norm(
    self: Sequence[torch.Tensor], ord: Any = 2, dtype: torch.dtype | None = None
) -> list[torch.Tensor]:
    """aten::_foreach_norm.Scalar: the vector norm of each tensor."""
    return [norms.linalg_vector_norm(t, ord, None, False, dtype=dtype) for t in self]


def _positional_value(per_tensor: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    """addcmul/addcdiv taking ``value`` positionally, as the foreach schemas pass it."""

    def run(self: Any, tensor1: Any, tensor2: Any, value: Any = 1) -> torch.Tensor:
        return per_tensor(self, tensor1, tensor2, value=value)

    return run


# Per base name: (functional per-tensor op, in-place per-tensor op, overload suffixes).
_BINARY_SUFFIXES: Final = (".Scalar", ".List", ".ScalarList", ".Tensor")
_FAMILIES: Final[
    dict[str, tuple[Callable[..., Any], Callable[..., Any] | None, tuple[str, ...]]]
] = {
    "add": (arithmetic.add, arithmetic.add_, _BINARY_SUFFIXES),
    "sub": (arithmetic.sub, arithmetic.sub_, _BINARY_SUFFIXES),
    "mul": (arithmetic.mul, arithmetic.mul_, _BINARY_SUFFIXES),
    "div": (arithmetic.div, arithmetic.div_, _BINARY_SUFFIXES),
    "maximum": (arithmetic.maximum, None, (".List",)),
    "minimum": (arithmetic.minimum, None, (".List",)),
    "lerp": (ternary.lerp, ternary.lerp_, (".Scalar", ".List")),
    "addcmul": (
        _positional_value(ternary.addcmul),
        _positional_value(ternary.addcmul_),
        (".Scalar", ".ScalarList"),
    ),
    "addcdiv": (
        _positional_value(ternary.addcdiv),
        _positional_value(ternary.addcdiv_),
        (".Scalar", ".ScalarList"),
    ),
    **{
        name: (family.functional, family.inplace, ("",))
        for name, family in {
            "sqrt": unary_math.SQRT,
            "exp": unary_math.EXP,
            "log": unary_math.LOG,
            "neg": unary_math.NEG,
            "abs": unary_math.ABS,
            "reciprocal": unary_math.RECIPROCAL,
            "sigmoid": unary_math.SIGMOID,
        }.items()
    },
}


def _exists(overload: str) -> bool:
    name, _, suffix = overload.partition(".")
    return hasattr(getattr(torch.ops.aten, name, None), suffix or "default")


def _table() -> dict[str, Callable[..., Any]]:
    table: dict[str, Callable[..., Any]] = {"_foreach_norm.Scalar": foreach_norm}
    for name, (functional, inplace, suffixes) in _FAMILIES.items():
        for suffix in suffixes:
            table[f"_foreach_{name}{suffix}"] = _functional(functional)
            if inplace is not None:
                table[f"_foreach_{name}_{suffix}"] = _inplace(inplace)
    return {overload: impl for overload, impl in table.items() if _exists(overload)}


# ATen overload -> implementation.
FOREACH: Final[dict[str, Callable[..., Any]]] = _table()


REGISTRATIONS: Final[tuple[Registration, ...]] = (
    *(Registration(overload, impl, condition=all_floating) for overload, impl in FOREACH.items()),
)
