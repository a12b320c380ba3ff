"""Indexed reads and writes along one dim: index_select, gather, scatter, index_add, index_put.

Each op views its operands as (outer, dim, inner) or, for gather/scatter, as rows with the
indexed dim last; one program handles one output row.
"""

from __future__ import annotations

from typing import Any

import torch
import triton  # type: ignore[import-untyped]
import triton.language as tl  # type: ignore[import-untyped]

from gems_kernels.backends import current_vendor, launch_config
from gems_kernels.ops.row_layout import normalize_dims

__all__ = [
    "gather",
    "index_add",
    "index_put_",
    "index_select",
    "is_row_index_put",
    "same_leading_shape",
    "scatter_src",
    "scatter_value",
]  # fmt: skip


@triton.jit
def _index_select_kernel(x, index, out, dim_size, num_index, inner, BLOCK_N: tl.constexpr):
    program = tl.program_id(0).to(tl.int64)
    outer = program // num_index
    position = program % num_index
    source_row = tl.load(index + position).to(tl.int64)
    source = x + (outer * dim_size + source_row) * inner
    for start in range(0, inner, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = cols < inner
        tl.store(out + program * inner + cols, tl.load(source + cols, mask=mask), mask=mask)


@triton.jit
def _index_add_kernel(out, index, source, alpha, dim_size, num_index, inner,
                      BLOCK_N: tl.constexpr):  # fmt: skip
    program = tl.program_id(0).to(tl.int64)
    outer = program // num_index
    position = program % num_index
    target_row = tl.load(index + position).to(tl.int64)
    target = out + (outer * dim_size + target_row) * inner
    for start in range(0, inner, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = cols < inner
        values = tl.load(source + program * inner + cols, mask=mask, other=0.0)
        tl.atomic_add(target + cols, values * alpha, mask=mask)


@triton.jit
def _index_put_rows_kernel(out, index, values, inner, ACCUMULATE: tl.constexpr,
                           BLOCK_N: tl.constexpr):  # fmt: skip
    program = tl.program_id(0).to(tl.int64)
    target = out + tl.load(index + program).to(tl.int64) * inner
    for start in range(0, inner, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = cols < inner
        row = tl.load(values + program * inner + cols, mask=mask)
        if ACCUMULATE:
            tl.atomic_add(target + cols, row, mask=mask)
        else:
            tl.store(target + cols, row, mask=mask)


@triton.jit
def _gather_kernel(x, index, out, row_size, num_index, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    for start in range(0, num_index, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = cols < num_index
        positions = tl.load(index + row * num_index + cols, mask=mask, other=0).to(tl.int64)
        values = tl.load(x + row * row_size + positions, mask=mask)
        tl.store(out + row * num_index + cols, values, mask=mask)


@triton.jit
def _scatter_kernel(out, index, source, value, row_size, num_index,
                    FROM_SOURCE: tl.constexpr, BLOCK_N: tl.constexpr):  # fmt: skip
    row = tl.program_id(0).to(tl.int64)
    for start in range(0, num_index, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = cols < num_index
        positions = tl.load(index + row * num_index + cols, mask=mask, other=0).to(tl.int64)
        if FROM_SOURCE:
            values = tl.load(source + row * num_index + cols, mask=mask)
        else:
            values = tl.load(value + tl.zeros([BLOCK_N], tl.int32))
        tl.store(out + row * row_size + positions, values, mask=mask)


def _block(size: int) -> tuple[int, int]:
    config = launch_config(current_vendor().name, "row")
    return min(triton.next_power_of_2(max(size, 1)), config.block_size), config.num_warps


def _check_range(index: torch.Tensor, size: int, name: str) -> None:
    # Checked only where it costs no device synchronisation.
    on_cpu = index.device.type == "cpu" and index.numel()
    if on_cpu and (int(index.min()) < 0 or int(index.max()) >= size):
        raise IndexError(f"{name}: index out of range for a dimension of size {size}")


def _outer_inner(x: torch.Tensor, axis: int) -> tuple[int, int]:
    outer = 1
    for size in x.shape[:axis]:
        outer *= size
    inner = 1
    for size in x.shape[axis + 1 :]:
        inner *= size
    return outer, inner


def index_select(self: torch.Tensor, dim: int, index: torch.Tensor) -> torch.Tensor:
    """aten::index_select."""
    if self.dim() == 0:
        return self.clone()
    (axis,) = normalize_dims(dim, self.dim())
    _check_range(index, self.shape[axis], "index")
    flat = index.reshape(-1).contiguous()
    shape = list(self.shape)
    shape[axis] = flat.numel()
    out = torch.empty(shape, dtype=self.dtype, device=self.device)
    outer, inner = _outer_inner(self, axis)
    if out.numel():
        block, warps = _block(inner)
        _index_select_kernel[(outer * flat.numel(),)](
            self.contiguous(), flat, out, self.shape[axis], flat.numel(), inner,
            BLOCK_N=block, num_warps=warps,
        )  # fmt: skip
    return out


def index_add(
    self: torch.Tensor, dim: int, index: torch.Tensor, source: torch.Tensor, *, alpha: Any = 1
) -> torch.Tensor:
    """aten::index_add: a copy of ``self`` with alpha * source rows added at ``index``."""
    (axis,) = normalize_dims(dim, self.dim())
    _check_range(index, self.shape[axis], "index")
    out = self.to(torch.float32, copy=True).contiguous()
    flat = index.reshape(-1).contiguous()
    outer, inner = _outer_inner(self, axis)
    if source.numel():
        block, warps = _block(inner)
        _index_add_kernel[(outer * flat.numel(),)](
            out, flat, source.contiguous(), alpha, self.shape[axis], flat.numel(), inner,
            BLOCK_N=block, num_warps=warps,
        )  # fmt: skip
    return out.to(self.dtype)


def same_leading_shape(self: torch.Tensor, dim: int, index: torch.Tensor, *args: Any,
                       **kwargs: Any) -> bool:  # fmt: skip
    """Condition: ``index`` (and a tensor source) match ``self`` except along ``dim``."""
    if self.dim() == 0 or index.dim() != self.dim():
        return False
    (axis,) = normalize_dims(dim, self.dim())
    others = [index, *(a for a in args if isinstance(a, torch.Tensor))]
    return all(
        t.shape[:axis] + t.shape[axis + 1 :] == self.shape[:axis] + self.shape[axis + 1 :]
        and (t is index or t.shape[axis] == index.shape[axis])
        for t in others
    )


def _rows_last(t: torch.Tensor, axis: int) -> torch.Tensor:
    return t.movedim(axis, -1).contiguous()


def gather(self: torch.Tensor, dim: int, index: torch.Tensor,
           sparse_grad: bool = False) -> torch.Tensor:  # fmt: skip
    """aten::gather (index matching ``self`` outside ``dim``)."""
    (axis,) = normalize_dims(dim, self.dim())
    _check_range(index, self.shape[axis], "index")
    source, positions = _rows_last(self, axis), _rows_last(index, axis)
    out = torch.empty(positions.shape, dtype=self.dtype, device=self.device)
    row_size, num_index = source.shape[-1], positions.shape[-1]
    if out.numel():
        block, warps = _block(num_index)
        _gather_kernel[(out.numel() // num_index,)](
            source, positions, out, row_size, num_index, BLOCK_N=block, num_warps=warps
        )
    return out.movedim(-1, axis)


def _scatter(self: torch.Tensor, dim: int, index: torch.Tensor, source: torch.Tensor | None,
             value: Any) -> torch.Tensor:  # fmt: skip
    (axis,) = normalize_dims(dim, self.dim())
    _check_range(index, self.shape[axis], "index")
    out = _rows_last(self, axis).clone()
    positions = _rows_last(index, axis)
    row_size, num_index = out.shape[-1], positions.shape[-1]
    if positions.numel():
        block, warps = _block(num_index)
        _scatter_kernel[(positions.numel() // num_index,)](
            out, positions, None if source is None else _rows_last(source, axis),
            torch.full((1,), value, dtype=out.dtype, device=out.device) if source is None else None,
            row_size, num_index, FROM_SOURCE=source is not None, BLOCK_N=block, num_warps=warps,
        )  # fmt: skip
    return out.movedim(-1, axis).contiguous()


def scatter_src(self: torch.Tensor, dim: int, index: torch.Tensor,
                src: torch.Tensor) -> torch.Tensor:  # fmt: skip
    """aten::scatter.src (duplicate indices: one of the written values wins, as in ATen)."""
    return _scatter(self, dim, index, src, 0)


def scatter_value(self: torch.Tensor, dim: int, index: torch.Tensor, value: Any) -> torch.Tensor:
    """aten::scatter.value."""
    return _scatter(self, dim, index, None, value)


def is_row_index_put(self: torch.Tensor, indices: Any, values: torch.Tensor,
                     accumulate: bool = False, unsafe: bool = False) -> bool:  # fmt: skip
    """Condition: one 1-D integer index on dim 0, values of self's dtype; accumulation only
    into float32 (atomic adds)."""
    if self.dim() == 0 or len(indices) != 1 or indices[0] is None:
        return False
    index = indices[0]
    return (
        index.dim() == 1
        and index.dtype in (torch.int32, torch.int64)
        and values.dtype == self.dtype
        and self.is_contiguous()
        and (not accumulate or self.dtype == torch.float32)
    )


def index_put_(self: torch.Tensor, indices: Any, values: torch.Tensor, accumulate: bool = False,
               unsafe: bool = False) -> torch.Tensor:  # fmt: skip
    """aten::_index_put_impl_ for ``self[index] = values`` (or ``+=``) on dim 0, in place."""
    (index,) = indices
    _check_range(index, self.shape[0], "indices")
    rows = values.expand(index.shape[0], *self.shape[1:]).contiguous()
    inner = rows[0].numel() if rows.shape[0] else 0
    if index.numel() and inner:
        block, warps = _block(inner)
        _index_put_rows_kernel[(index.numel(),)](
            self, index.contiguous(), rows, inner, ACCUMULATE=accumulate, BLOCK_N=block,
            num_warps=warps,
        )  # fmt: skip
    return self
