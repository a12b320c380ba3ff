"""Viewing a reduction as rows: the kept dims become rows, the reduced dims one contiguous row."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import torch
import triton.language as tl

from gems_kernels.ops import copies
from gems_kernels.ops.dims import normalize_dims

__all__ = ["ACCUMULATORS", "RowLayout", "accumulator", "normalize_dims", "to_rows"]

ACCUMULATORS: Final = {
    torch.float16: tl.float32,
    torch.bfloat16: tl.float32,
    torch.float32: tl.float32,
    torch.float64: tl.float64,
}


def accumulator(dtype: torch.dtype) -> tl.dtype:
    """The Triton dtype to accumulate ``dtype`` values in (float32 for halves, int64 for ints)."""
    return ACCUMULATORS.get(dtype, tl.int64)


@dataclass(frozen=True)
class RowLayout:
    """``rows`` is (M, N) (contiguous unless asked otherwise); ``shape`` is the result shape
    (keepdim applied)."""

    rows: torch.Tensor
    shape: tuple[int, ...]

    @property
    def num_rows(self) -> int:
        return self.rows.shape[0]

    @property
    def row_size(self) -> int:
        return self.rows.shape[1]


def to_rows(
    x: torch.Tensor, dims: Sequence[int], keepdim: bool, strided: bool = False
) -> RowLayout:
    """Permute ``dims`` of ``x`` last and flatten into (kept elements, reduced elements).

    The rows are contiguous unless ``strided`` is set, in which case a view with any two
    strides is returned when one exists (e.g. reducing dim 0 of a matrix), avoiding a copy.
    """
    if x.dim() == 0:
        return RowLayout(x.reshape(1, 1), ())
    kept = [d for d in range(x.dim()) if d not in dims]
    num_rows = math.prod(x.shape[d] for d in kept)
    row_size = math.prod(x.shape[d] for d in dims)
    permuted = x.permute(*kept, *dims)
    rows = None
    if strided:
        try:
            rows = permuted.view(num_rows, row_size)
        except RuntimeError:
            rows = None  # not expressible with two strides: copy below
    if rows is None:  # a gems copy: host code never computes on ATen
        rows = copies.contiguous(permuted).view(num_rows, row_size)
    if keepdim:
        shape = tuple(1 if d in dims else x.shape[d] for d in range(x.dim()))
    else:
        shape = tuple(x.shape[d] for d in kept)
    return RowLayout(rows, shape)
