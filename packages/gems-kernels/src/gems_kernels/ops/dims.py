"""Dimension arguments of reductions and joins, checked and made non-negative."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["normalize_dims"]


def normalize_dims(dims: int | Sequence[int] | None, ndim: int, name: str = "dim") -> list[int]:
    """Sorted non-negative dims; None or empty means all (a 0-d tensor has the one dim 0)."""
    if dims is None:
        dims = []
    elif isinstance(dims, int):
        dims = [dims]
    rank = max(ndim, 1)
    result = []
    for dim in dims:
        if not -rank <= dim < rank:
            raise IndexError(
                f"{name}: dimension {dim} out of range for a tensor of {ndim} dimensions"
            )
        result.append(dim % rank)
    if len(set(result)) != len(result):
        raise RuntimeError(f"{name}: dimension {dims} appears more than once")
    return sorted(result) if result else list(range(ndim))
