"""Functional, in-place and ``out=`` entry points around one :class:`PointwiseOp`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from gems_kernels.pointwise import PointwiseOp

__all__ = ["Variants", "variants"]


@dataclass(frozen=True)
class Variants:
    """functional(*args); inplace(self, *args) writes into self; out(*args, out=)."""

    functional: Callable[..., torch.Tensor]
    inplace: Callable[..., torch.Tensor]
    out: Callable[..., torch.Tensor]


def variants(op: PointwiseOp[torch.Tensor]) -> Variants:
    """The three variants of a one-output ``op`` taking its arguments positionally."""

    def functional(*args: Any) -> torch.Tensor:
        return op(*args)

    def inplace(*args: Any) -> torch.Tensor:
        return op(*args, out0=args[0])

    def out(*args: Any, out: torch.Tensor) -> torch.Tensor:
        return op(*args, out0=out)

    functional.__name__ = op.__name__
    inplace.__name__ = f"{op.__name__}_"
    out.__name__ = f"{op.__name__}_out"
    return Variants(functional, inplace, out)
