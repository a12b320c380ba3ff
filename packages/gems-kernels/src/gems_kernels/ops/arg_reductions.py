"""Reductions that also return positions: max.dim / min.dim (values and indices), argmax, argmin.

Ties resolve to the first index and NaN counts as the largest (and smallest) value, as in ATen.
Integer inputs are compared as int64 (exact at any magnitude, where a float32 key would round).
"""

from __future__ import annotations

from typing import Final

import torch
import triton
import triton.language as tl

from gems_kernels.backends import current_vendor, launch_config, tuning
from gems_kernels.ops.registering import Registration
from gems_kernels.ops.row_layout import normalize_dims, to_rows
from gems_kernels.pointwise.rounding import store

__all__ = ["REGISTRATIONS", "argmax", "argmin", "max_dim", "min_dim"]


@triton.jit
def _arg_reduce_rows_kernel(
    x, values_out, indices_out, num_rows, row_size,
    SIGN: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    """Arg-max of SIGN * x per row (SIGN=-1 gives arg-min); NaN beats every number."""
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < num_rows
    base = rows.to(tl.int64)[:, None] * row_size
    best = tl.full([BLOCK_M], float("-inf"), tl.float32)
    best_index = tl.zeros([BLOCK_M], tl.int64)
    found_nan = tl.zeros([BLOCK_M], tl.int1)
    for start in range(0, row_size, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = row_mask[:, None] & (cols < row_size)[None, :]
        values = tl.load(x + base + cols[None, :], mask=mask, other=0).to(tl.float32) * SIGN
        is_nan = (values != values) & mask
        key = tl.where(mask, values, float("-inf"))
        block_best = tl.max(tl.where(is_nan, float("-inf"), key), axis=1)
        big = row_size + BLOCK_N
        hit = (key == block_best[:, None]) & mask
        block_index = tl.min(tl.where(hit, cols[None, :], big), axis=1).to(tl.int64)
        block_nan = tl.max(is_nan.to(tl.int32), axis=1) > 0
        nan_index = tl.min(tl.where(is_nan, cols[None, :], big), axis=1).to(tl.int64)
        take_nan = block_nan & (~found_nan)
        take = (~found_nan) & (~block_nan) & (block_best > best)
        # The first block holding the maximum sets the index: later equal values do not.
        first = (start == 0) & (~block_nan)
        take = take | (first & (block_best >= best))
        best_index = tl.where(take_nan, nan_index, tl.where(take, block_index, best_index))
        best = tl.where(take_nan, float("nan"), tl.where(take, block_best, best))
        found_nan = found_nan | block_nan
    store(values_out + rows, best * SIGN, mask=row_mask)
    store(indices_out + rows, best_index, mask=row_mask)


@triton.jit
def _int_arg_reduce_rows_kernel(
    x, values_out, indices_out, num_rows, row_size,
    SIGN: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    """Arg-max of integer rows (SIGN=-1: arg-min, through the order-reversing ~x, which has no
    overflow at the smallest int64 as -x would)."""
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < num_rows
    base = rows.to(tl.int64)[:, None] * row_size
    lowest = tl.full([BLOCK_M, BLOCK_N], -(2**63), tl.int64)
    best = tl.max(lowest, axis=1)
    best_index = tl.zeros([BLOCK_M], tl.int64)
    for start in range(0, row_size, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = row_mask[:, None] & (cols < row_size)[None, :]
        values = tl.load(x + base + cols[None, :], mask=mask, other=0).to(tl.int64)
        if SIGN < 0:
            values = ~values
        key = tl.where(mask, values, lowest)
        block_best = tl.max(key, axis=1)
        hit = (key == block_best[:, None]) & mask
        block_index = tl.min(tl.where(hit, cols[None, :], row_size + BLOCK_N), axis=1)
        # Strictly larger only: the earlier block keeps a tie; the first block always sets it.
        take = (block_best > best) | (start == 0)
        best_index = tl.where(take, block_index.to(tl.int64), best_index)
        best = tl.where(take, block_best, best)
    if SIGN < 0:
        best = ~best
    tl.store(values_out + rows, best.to(values_out.dtype.element_ty), mask=row_mask)
    tl.store(indices_out + rows, best_index, mask=row_mask)


def _arg_reduce(
    x: torch.Tensor, dim: int | None, keepdim: bool, is_max: bool, name: str
) -> tuple[torch.Tensor, torch.Tensor]:
    dims = normalize_dims(dim, x.dim(), name="dim") if dim is not None else None
    flat = x.reshape(-1) if dims is None else x
    layout = to_rows(flat, dims if dims is not None else [0] if flat.dim() else [], keepdim)
    shape = layout.shape
    if dims is None and keepdim:
        shape = (1,) * x.dim()
    if layout.row_size == 0:
        raise IndexError(f"{name}: expected reduction dim to have a non-zero size")
    values = torch.empty(shape, dtype=x.dtype, device=x.device)
    indices = torch.empty(shape, dtype=torch.int64, device=x.device)
    if layout.num_rows == 0:
        return values, indices
    config = launch_config(current_vendor().name, "reduction")
    block_n = min(tuning.next_power_of_2(layout.row_size), config.block_size)
    block_m = max(1, min(config.block_size // block_n, tuning.next_power_of_2(layout.num_rows)))
    grid = (tuning.cdiv(layout.num_rows, block_m),)
    kernel = _arg_reduce_rows_kernel if x.is_floating_point() else _int_arg_reduce_rows_kernel
    kernel.run(
        layout.rows, values, indices, layout.num_rows, layout.row_size,
        SIGN=1 if is_max else -1, BLOCK_M=block_m, BLOCK_N=block_n, num_warps=config.num_warps,
        grid=grid, warmup=False,
    )  # fmt: skip
    return values, indices


def max_dim(x: torch.Tensor, dim: int, keepdim: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """aten::max.dim: (values, indices)."""
    return _arg_reduce(x, dim, keepdim, True, "max")


def min_dim(x: torch.Tensor, dim: int, keepdim: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """aten::min.dim: (values, indices)."""
    return _arg_reduce(x, dim, keepdim, False, "min")


def argmax(x: torch.Tensor, dim: int | None = None, keepdim: bool = False) -> torch.Tensor:
    """aten::argmax (``dim=None`` indexes the flattened tensor)."""
    return _arg_reduce(x, dim, keepdim, True, "argmax")[1]


def argmin(x: torch.Tensor, dim: int | None = None, keepdim: bool = False) -> torch.Tensor:
    """aten::argmin."""
    return _arg_reduce(x, dim, keepdim, False, "argmin")[1]


_INTEGERS: Final = frozenset((torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64))


def is_real(x: torch.Tensor, *args: object, **kwargs: object) -> bool:
    """Condition: floating inputs but float64 (float32 keys), and integer ones (bool and
    float64 stay in ATen)."""
    return (x.is_floating_point() and x.dtype != torch.float64) or x.dtype in _INTEGERS


REGISTRATIONS: Final[tuple[Registration, ...]] = (
    Registration("max.dim", max_dim, condition=is_real),
    Registration("min.dim", min_dim, condition=is_real),
    Registration("argmax", argmax, condition=is_real),
    Registration("argmin", argmin, condition=is_real),
)
