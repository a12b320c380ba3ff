"""What an op module declares about itself: :class:`Registration` entries, the helpers that
build the usual families (functional, in-place, ``out=``), and the conditions several modules
share. ``gems_kernels.registration`` gathers every module's ``REGISTRATIONS``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from gems_kernels.ops.variants import Variants

__all__ = [
    "Registration",
    "all_floating",
    "binary_entries",
    "bitwise_entries",
    "entries",
    "no_bool",
    "pointwise_entries",
]


@dataclass(frozen=True)
class Registration:
    """One ATen overload, its implementation and the condition under which it applies.

    ``autograd`` entries register at the vendor's autograd key because the overload is a
    composite that ATen would otherwise decompose before reaching the backend key; their
    implementation records its own backward.
    """

    overload: str
    impl: Callable[..., Any]
    condition: Callable[..., bool] | None = None
    autograd: bool = False

    @property
    def op_name(self) -> str:
        """The overload's operator name without the overload suffix."""
        return self.overload.split(".", 1)[0]

    @property
    def overload_name(self) -> str:
        """The overload suffix; ``default`` when the name has none."""
        return self.overload.split(".", 1)[1] if "." in self.overload else "default"


def entries(impl: Callable[..., Any], *overloads: str, **options: Any) -> list[Registration]:
    """One entry per overload, all with ``impl`` and the same options."""
    return [Registration(overload, impl, **options) for overload in overloads]


def pointwise_entries(name: str, family: Variants, **options: Any) -> list[Registration]:
    """``name``, ``name_`` and ``name.out`` for a pointwise op with positional arguments."""
    return [
        Registration(name, family.functional, **options),
        Registration(f"{name}_", family.inplace, **options),
        Registration(f"{name}.out", family.out, **options),
    ]


def binary_entries(name: str, family: Variants, **options: Any) -> list[Registration]:
    """The Tensor and Scalar overloads of a binary pointwise op, functional and in-place."""
    return [
        *entries(family.functional, f"{name}.Tensor", f"{name}.Scalar", **options),
        *entries(family.inplace, f"{name}_.Tensor", f"{name}_.Scalar", **options),
        Registration(f"{name}.Tensor_out", family.out, **options),
    ]


def bitwise_entries(
    name: str, family: Variants, condition: Callable[..., bool]
) -> list[Registration]:
    """Bitwise ops: functional and in-place, Tensor and Scalar, under ``condition``."""
    return [
        *entries(family.functional, f"{name}.Tensor", f"{name}.Scalar", condition=condition),
        *entries(family.inplace, f"{name}_.Tensor", f"{name}_.Scalar", condition=condition),
    ]


def no_bool(self: Any, other: Any = None, *args: Any, **kwargs: Any) -> bool:
    """sub, neg and abs refuse bool operands in ATen: those calls go there for its error."""
    return not any(
        isinstance(x, bool) or (isinstance(x, torch.Tensor) and x.dtype == torch.bool)
        for x in (self, other)
    )


def all_floating(*args: Any, **kwargs: Any) -> bool:
    """Condition: every tensor in the arguments is floating point and on one device."""
    tensors = [
        t
        for arg in (*args, *kwargs.values())
        for t in (arg if isinstance(arg, (list, tuple)) else (arg,))
        if isinstance(t, torch.Tensor)
    ]
    return all(t.is_floating_point() for t in tensors) and len({t.device for t in tensors}) <= 1
