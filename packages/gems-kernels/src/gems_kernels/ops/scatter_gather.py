"""gather, scatter, scatter_add and scatter_reduce along one dim, with the general contract of
torch.gather/scatter: ``index`` may be smaller than ``self`` (and ``src``) outside ``dim``.

Operands are narrowed to the index's shape outside ``dim`` (views, no copies) and walked through
offset tables (:mod:`gems_kernels.ops.indexed_copy`), so any layout is read in place. Additions use
atomics (float32 accumulation for half types); the other reductions walk each line in index order.
"""

from __future__ import annotations

from typing import Any, Final

import torch

from gems_kernels.ops import indexed_copy
from gems_kernels.ops.registering import Registration
from gems_kernels.ops.row_layout import normalize_dims

__all__ = [
    "REGISTRATIONS",
    "fits_scatter_add",
    "fits_scatter_reduce",
    "gather",
    "is_gather_shape",
    "scatter_add",
    "scatter_add_",
    "scatter_reduce",
    "scatter_reduce_",
    "scatter_src",
    "scatter_value",
]  # fmt: skip


def _shape(t: torch.Tensor) -> tuple[int, ...]:
    return tuple(t.shape) if t.dim() else (1,)


def is_gather_shape(self: torch.Tensor, dim: int, index: torch.Tensor, *args: Any,
                    **kwargs: Any) -> bool:  # fmt: skip
    """Condition: an int64 ``index`` of ``self``'s rank, no larger than ``self`` outside ``dim``
    and (for a tensor ``src`` of self's dtype) no larger than ``src`` anywhere. Other calls go to
    ATen, which reports them."""
    rank = len(_shape(self))
    if index.dtype != torch.int64 or len(_shape(index)) != rank or not -rank <= dim < rank:
        return False
    axis = dim % rank
    sizes, index_sizes = _shape(self), _shape(index)
    if any(index_sizes[d] > sizes[d] for d in range(rank) if d != axis):
        return False
    src = next((a for a in args if isinstance(a, torch.Tensor)), None)
    return src is None or (
        src.dtype == self.dtype
        and len(_shape(src)) == rank
        and all(i <= s for i, s in zip(index_sizes, _shape(src), strict=True))
    )


def fits_scatter_add(self: torch.Tensor, *args: Any, **kwargs: Any) -> bool:
    """Condition: :func:`is_gather_shape`, atomic adds allowed into self, no overlapping
    elements in self."""
    return (
        indexed_copy.atomic_adds_allowed(self)
        and not indexed_copy.has_internal_overlap(self)
        and is_gather_shape(self, *args, **kwargs)
    )


def fits_scatter_reduce(self: torch.Tensor, dim: int, index: torch.Tensor, src: torch.Tensor,
                        reduce: str, **kwargs: Any) -> bool:  # fmt: skip
    """Condition: :func:`is_gather_shape`, a known reduction, an accumulable dtype and no
    overlapping elements in self (the lines kernel is deterministic: no atomics)."""
    return (
        reduce in indexed_copy.REDUCTIONS
        and self.dtype in indexed_copy.ACCUMULABLE
        and not indexed_copy.has_internal_overlap(self)
        and is_gather_shape(self, dim, index, src)
    )


def _narrow(t: torch.Tensor, sizes: tuple[int, ...], keep: int | None) -> torch.Tensor:
    """``t`` (0-d as 1-D) narrowed to ``sizes`` in every dim but ``keep``: a view."""
    view = t.reshape(1) if t.dim() == 0 else t
    for d, size in enumerate(sizes):
        if d != keep and view.shape[d] != size:
            view = view.narrow(d, 0, size)
    return view


class _Operands:
    """The index and the indexed tensor of one gather/scatter call, walked along ``axis``."""

    def __init__(self, dest: torch.Tensor, dim: int, index: torch.Tensor) -> None:
        (self.axis,) = normalize_dims(dim, dest.dim())
        self.index = index.reshape(1) if index.dim() == 0 else index
        self.sizes = tuple(self.index.shape)
        self.dim_size = _shape(dest)[self.axis]
        indexed_copy.check_range(
            self.index, self.dim_size, self.axis, negative=False, error=RuntimeError
        )

    def walk(self, t: torch.Tensor) -> indexed_copy.Walk:
        """A plain operand narrowed to the index's shape (a 0-d one broadcast to it)."""
        view = t.expand(self.sizes) if t.dim() == 0 else _narrow(t, self.sizes, None)
        return indexed_copy.walk(view, self.axis, self.axis + 1)

    def target(self, t: torch.Tensor) -> indexed_copy.Target:
        """The indexed operand narrowed to the index's shape outside ``axis``."""
        view = _narrow(t, self.sizes, self.axis)
        return indexed_copy.target(view, self.axis, self.axis + 1, view.stride(self.axis))

    def copy(self, mode: int, dest: torch.Tensor, plain: torch.Tensor) -> None:
        """One indexed copy between ``dest`` (indexed) and ``plain``."""
        indexed_copy.indexed_copy(
            mode, self.target(dest), self.walk(plain), self.walk(self.index), self.dim_size
        )


def gather(self: torch.Tensor, dim: int, index: torch.Tensor,
           sparse_grad: bool = False) -> torch.Tensor:  # fmt: skip
    """aten::gather."""
    operands = _Operands(self, dim, index)
    out = torch.empty(operands.sizes, dtype=self.dtype, device=self.device)
    operands.copy(indexed_copy.TAKE, self, out)
    return out.reshape(index.shape)


def _scatter(self: torch.Tensor, dim: int, index: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
    operands = _Operands(self, dim, index)
    out = self.clone(memory_format=torch.contiguous_format)
    operands.copy(indexed_copy.STORE, out, src)
    return out


def scatter_src(self: torch.Tensor, dim: int, index: torch.Tensor,
                src: torch.Tensor) -> torch.Tensor:  # fmt: skip
    """aten::scatter.src (duplicate indices: one of the written values wins, as in ATen)."""
    return _scatter(self, dim, index, src)


def _filler(like: torch.Tensor, value: Any) -> torch.Tensor:
    """``value`` as a 0-d tensor of ``like``'s dtype and device (operands broadcast it)."""
    return torch.full((), value, dtype=like.dtype, device=like.device)


def scatter_value(self: torch.Tensor, dim: int, index: torch.Tensor, value: Any) -> torch.Tensor:
    """aten::scatter.value."""
    return _scatter(self, dim, index, _filler(self, value))


def _accumulator(self: torch.Tensor) -> torch.Tensor:
    """A contiguous copy of ``self`` to accumulate into (float32 for half types)."""
    dtype = torch.float32 if self.dtype in indexed_copy.HALVES else self.dtype
    return self.to(dtype, memory_format=torch.contiguous_format, copy=True)


def scatter_add(self: torch.Tensor, dim: int, index: torch.Tensor,
                src: torch.Tensor) -> torch.Tensor:  # fmt: skip
    """aten::scatter_add (atomic adds; float32 accumulation for half types)."""
    work = _accumulator(self)
    _Operands(self, dim, index).copy(indexed_copy.ADD, work, src)
    return work.to(self.dtype)


def scatter_add_(self: torch.Tensor, dim: int, index: torch.Tensor,
                 src: torch.Tensor) -> torch.Tensor:  # fmt: skip
    """aten::scatter_add_ (so gather's backward, which scatter-adds into zeros)."""
    if self.dtype in indexed_copy.HALVES:
        return self.copy_(scatter_add(self, dim, index, src))
    _Operands(self, dim, index).copy(indexed_copy.ADD, self, src)
    return self


def _identity(reduce: str, dtype: torch.dtype) -> float | int:
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if dtype.is_floating_point:
        low, high = float("-inf"), float("inf")
    else:
        low, high = torch.iinfo(dtype).min, torch.iinfo(dtype).max
    return low if reduce == "amax" else high


def scatter_reduce(self: torch.Tensor, dim: int, index: torch.Tensor, src: torch.Tensor,
                   reduce: str, *, include_self: bool = True) -> torch.Tensor:  # fmt: skip
    """aten::scatter_reduce.two: sum, prod, mean, amax or amin of the values scattered to each
    position (and of ``self``'s value when ``include_self``); positions no index names keep
    ``self``. Integer means round down, as in ATen."""
    operands = _Operands(self, dim, index)
    work = _accumulator(self)
    if not include_self:
        operands.copy(indexed_copy.STORE, work, _filler(work, _identity(reduce, work.dtype)))
    count = None
    if reduce == "mean":
        count = torch.full_like(work, 1 if include_self else 0)
    if reduce in ("sum", "mean") and indexed_copy.atomic_adds_allowed(work):
        # Atomic adds: every index position in parallel (lines walk one lane per line).
        operands.copy(indexed_copy.ADD, work, src)
        if count is not None:
            operands.copy(indexed_copy.ADD, count, _filler(count, 1))
    else:
        indexed_copy.reduce_lines(
            reduce, operands.target(work), operands.walk(src), operands.walk(operands.index),
            operands.dim_size, count,
        )  # fmt: skip
    if count is not None:
        count.clamp_(min=1)
        rounding = None if work.is_floating_point() else "floor"
        work = work.div(count, rounding_mode=rounding)
    return work.to(self.dtype)


def scatter_reduce_(self: torch.Tensor, dim: int, index: torch.Tensor, src: torch.Tensor,
                    reduce: str, *, include_self: bool = True) -> torch.Tensor:  # fmt: skip
    """aten::scatter_reduce_.two."""
    return self.copy_(scatter_reduce(self, dim, index, src, reduce, include_self=include_self))


REGISTRATIONS: Final[tuple[Registration, ...]] = (
    Registration("gather", gather, condition=is_gather_shape),
    Registration("scatter.src", scatter_src, condition=is_gather_shape),
    Registration("scatter.value", scatter_value, condition=is_gather_shape),
    Registration("scatter_add", scatter_add, condition=fits_scatter_add),
    Registration("scatter_add_", scatter_add_, condition=fits_scatter_add),
    Registration("scatter_reduce.two", scatter_reduce, condition=fits_scatter_reduce),
    Registration("scatter_reduce_.two", scatter_reduce_, condition=fits_scatter_reduce),
)
