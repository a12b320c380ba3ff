"""Typed calls of ``torch.autograd.Function.apply``, which torch leaves unannotated."""

from __future__ import annotations

from typing import Any, cast

import torch

__all__ = ["apply", "apply_pair"]


def apply(function: type[torch.autograd.Function], *args: Any) -> torch.Tensor:
    """``function.apply(*args)`` for a ``function`` whose forward returns one tensor."""
    return cast(torch.Tensor, function.apply(*args))


def apply_pair(
    function: type[torch.autograd.Function], *args: Any
) -> tuple[torch.Tensor, torch.Tensor]:
    """``function.apply(*args)`` for a ``function`` whose forward returns two tensors."""
    return cast(tuple[torch.Tensor, torch.Tensor], function.apply(*args))
