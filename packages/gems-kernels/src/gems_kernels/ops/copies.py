"""Element copies and fills: fill_, zero_ and cat (a strided copy into each slice)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import torch
import triton
import triton.language as tl

from gems_kernels.ops.row_layout import normalize_dims
from gems_kernels.pointwise import pointwise_dynamic

__all__ = ["cat", "fill_", "zero_"]


@pointwise_dynamic(is_tensor=[True], promotions=[((0,), "NO_OPMATH")])
@triton.jit
def _copy(x):
    return x


@pointwise_dynamic(is_tensor=[True, False], promotions=[((0,), "NO_OPMATH")])
@triton.jit
def _fill(x, value):
    # x only gives the shape: the loaded values are replaced.
    return tl.where(x == x, value, value)


def fill_(self: torch.Tensor, value: Any) -> torch.Tensor:
    """aten::fill_.Scalar / fill_.Tensor (a 0-d tensor value is read once on the host)."""
    if isinstance(value, torch.Tensor):
        if value.dim() != 0:
            raise RuntimeError(f"value: fill_ expects a 0-d tensor, got {value.dim()}-D")
        return _copy(value, out0=self)
    return _fill(self, value, out0=self)


def zero_(self: torch.Tensor) -> torch.Tensor:
    """aten::zero_."""
    return _fill(self, 0, out0=self)


def cat(tensors: Sequence[torch.Tensor], dim: int = 0) -> torch.Tensor:
    """aten::cat: each input copied into its slice of the result (1-D empty inputs skipped)."""
    inputs = [t for t in tensors if not (t.dim() == 1 and t.numel() == 0)]
    if not inputs:
        return torch.empty(0, dtype=tensors[0].dtype, device=tensors[0].device)
    first = inputs[0]
    (axis,) = normalize_dims(dim, first.dim())
    shape = list(first.shape)
    for t in inputs[1:]:
        if t.dim() != first.dim() or any(
            a != b for d, (a, b) in enumerate(zip(t.shape, first.shape, strict=True)) if d != axis
        ):
            raise RuntimeError(
                f"cat: sizes of tensors must match except in dimension {axis}: "
                f"{list(first.shape)} and {list(t.shape)}"
            )
    shape[axis] = sum(t.shape[axis] for t in inputs)
    dtype = functools.reduce(torch.promote_types, (t.dtype for t in inputs))
    out = torch.empty(shape, dtype=dtype, device=first.device)
    offset = 0
    for t in inputs:
        size = t.shape[axis]
        if t.numel():
            _copy(t, out0=out.narrow(axis, offset, size))
        offset += size
    return out
