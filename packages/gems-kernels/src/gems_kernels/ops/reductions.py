"""Reductions over any dims: sum, mean, prod, amax, amin, all, any (and max/min of all)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import torch
import triton
import triton.language as tl

from gems_kernels.backends import current_vendor, launch_config, tuning
from gems_kernels.ops.registering import Registration, entries
from gems_kernels.ops.row_layout import accumulator, normalize_dims, to_rows
from gems_kernels.pointwise.rounding import store

__all__ = [
    "REGISTRATIONS",
    "all_dim",
    "all_dims",
    "amax",
    "amin",
    "any_dim",
    "any_dims",
    "is_floating_input",
    "max_all",
    "mean",
    "mean_dim",
    "min_all",
    "prod",
    "prod_dim",
    "reduce",
    "sum",
    "sum_dim",
]

_SUM: Final = 0
_PROD: Final = 1
_MAX: Final = 2
_MIN: Final = 3
_ALL: Final = 4
_ANY: Final = 5
_OPS: Final = {"sum": _SUM, "prod": _PROD, "max": _MAX, "min": _MIN, "all": _ALL, "any": _ANY}


@triton.jit
def _reduce_rows_kernel(
    x, out, num_rows, row_size, row_stride, col_stride, scale,
    OP: tl.constexpr, ACC: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < num_rows
    base = rows.to(tl.int64)[:, None] * row_stride
    if OP == 0:
        acc = tl.zeros([BLOCK_M], ACC)
    elif OP == 1:
        acc = tl.full([BLOCK_M], 1, ACC)
    elif OP == 2:
        acc = tl.full([BLOCK_M], float("-inf"), ACC)
    elif OP == 3:
        acc = tl.full([BLOCK_M], float("inf"), ACC)
    elif OP == 4:
        acc = tl.full([BLOCK_M], 1, tl.int1)
    else:
        acc = tl.zeros([BLOCK_M], tl.int1)
    for start in range(0, row_size, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = row_mask[:, None] & (cols < row_size)[None, :]
        pointers = x + base + cols.to(tl.int64)[None, :] * col_stride
        if OP == 0:
            values = tl.load(pointers, mask=mask, other=0).to(ACC)
            acc += tl.sum(values, axis=1)
        elif OP == 1:
            values = tl.load(pointers, mask=mask, other=1).to(ACC)
            acc *= tl.reduce(values, 1, _multiply)
        elif OP == 2:
            values = tl.load(pointers, mask=mask, other=float("-inf")).to(ACC)
            nan = tl.max((values != values).to(tl.int32), axis=1)
            acc = tl.where(nan > 0, float("nan"), tl.maximum(acc, tl.max(values, axis=1)))
        elif OP == 3:
            values = tl.load(pointers, mask=mask, other=float("inf")).to(ACC)
            nan = tl.max((values != values).to(tl.int32), axis=1)
            acc = tl.where(nan > 0, float("nan"), tl.minimum(acc, tl.min(values, axis=1)))
        elif OP == 4:
            values = tl.load(pointers, mask=mask, other=1) != 0
            acc = acc & (tl.min(values.to(tl.int32), axis=1) > 0)
        else:
            values = tl.load(pointers, mask=mask, other=0) != 0
            acc = acc | (tl.max(values.to(tl.int32), axis=1) > 0)
    if OP == 0:
        acc = acc * scale
    store(out + rows, acc, mask=row_mask)


@triton.jit
def _multiply(a, b):
    return a * b


def reduce(
    x: torch.Tensor,
    op: str,
    dims: int | Sequence[int] | None,
    keepdim: bool,
    out_dtype: torch.dtype,
    scale: float = 1.0,
) -> torch.Tensor:
    """Reduce ``x`` over ``dims`` with ``op`` (sum, prod, max, min, all, any) into
    ``out_dtype``; ``sum`` results are multiplied by ``scale`` (mean passes 1/N)."""
    layout = to_rows(x, normalize_dims(dims, x.dim()), keepdim, strided=True)
    out = torch.empty(layout.shape, dtype=out_dtype, device=x.device)
    if layout.num_rows == 0:
        return out
    if layout.row_size == 0 and op in ("max", "min"):
        raise IndexError(f"{op}: cannot reduce over a zero-size dimension without an identity")
    acc = accumulator(out_dtype)
    config = launch_config(current_vendor().name, "reduction")
    row_stride, col_stride = layout.rows.stride()
    if col_stride == 1 or layout.num_rows == 1:
        # Elements of a row are adjacent: wide blocks along the row.
        block_n = min(tuning.next_power_of_2(max(layout.row_size, 1)), config.block_size)
        block_m = max(1, min(config.block_size // block_n, tuning.next_power_of_2(layout.num_rows)))
    else:
        # Reducing leading dims: neighbouring rows are adjacent, so blocks span many rows.
        block_m = min(tuning.next_power_of_2(layout.num_rows), 128)
        block_n = max(1, min(config.block_size // block_m, tuning.next_power_of_2(layout.row_size)))
    grid = (tuning.cdiv(layout.num_rows, block_m),)
    _reduce_rows_kernel.run(
        layout.rows, out, layout.num_rows, layout.row_size, row_stride, col_stride, scale,
        OP=_OPS[op], ACC=acc, BLOCK_M=block_m, BLOCK_N=block_n, num_warps=config.num_warps,
        grid=grid, warmup=False,
    )  # fmt: skip
    return out


def is_floating_input(x: torch.Tensor, *args: Any, **kwargs: Any) -> bool:
    """Condition: ``x`` is floating point (integer max/min and moments stay in ATen)."""
    return x.is_floating_point()


def _sum_dtype(x: torch.Tensor, dtype: torch.dtype | None) -> torch.dtype:
    if dtype is not None:
        return dtype
    return x.dtype if x.is_floating_point() else torch.int64


def sum(x: torch.Tensor, *, dtype: torch.dtype | None = None) -> torch.Tensor:
    """aten::sum."""
    return reduce(x, "sum", None, False, _sum_dtype(x, dtype))


def sum_dim(
    x: torch.Tensor,
    dim: Sequence[int] | None,
    keepdim: bool = False,
    *,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """aten::sum.dim_IntList."""
    return reduce(x, "sum", dim, keepdim, _sum_dtype(x, dtype))


def _mean_count(x: torch.Tensor, dim: Sequence[int] | None) -> int:
    count = 1
    for d in normalize_dims(dim, x.dim()):
        count *= x.shape[d] if x.dim() else 1
    return count


def _mean_dtype(x: torch.Tensor, dtype: torch.dtype | None) -> torch.dtype:
    result = dtype or x.dtype
    if not result.is_floating_point:
        raise RuntimeError(
            f"mean(): could not infer output dtype. Input dtype must be either a floating point "
            f"or complex dtype. Got: {result}"
        )
    return result


def mean(x: torch.Tensor, *, dtype: torch.dtype | None = None) -> torch.Tensor:
    """aten::mean."""
    count = _mean_count(x, None)
    scale = 1.0 / count if count else float("nan")
    return reduce(x, "sum", None, False, _mean_dtype(x, dtype), scale)


def mean_dim(
    x: torch.Tensor,
    dim: Sequence[int] | None,
    keepdim: bool = False,
    *,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """aten::mean.dim."""
    count = _mean_count(x, dim)
    scale = 1.0 / count if count else float("nan")
    return reduce(x, "sum", dim, keepdim, _mean_dtype(x, dtype), scale)


def prod(x: torch.Tensor, *, dtype: torch.dtype | None = None) -> torch.Tensor:
    """aten::prod."""
    return reduce(x, "prod", None, False, _sum_dtype(x, dtype))


def prod_dim(
    x: torch.Tensor, dim: int, keepdim: bool = False, *, dtype: torch.dtype | None = None
) -> torch.Tensor:
    """aten::prod.dim_int."""
    return reduce(x, "prod", dim, keepdim, _sum_dtype(x, dtype))


def amax(x: torch.Tensor, dim: Sequence[int] = (), keepdim: bool = False) -> torch.Tensor:
    """aten::amax (empty ``dim`` means every dim)."""
    return reduce(x, "max", list(dim), keepdim, x.dtype)


def amin(x: torch.Tensor, dim: Sequence[int] = (), keepdim: bool = False) -> torch.Tensor:
    """aten::amin."""
    return reduce(x, "min", list(dim), keepdim, x.dtype)


def max_all(x: torch.Tensor) -> torch.Tensor:
    """aten::max (of every element)."""
    return reduce(x, "max", None, False, x.dtype)


def min_all(x: torch.Tensor) -> torch.Tensor:
    """aten::min (of every element)."""
    return reduce(x, "min", None, False, x.dtype)


def _bool_dtype(x: torch.Tensor) -> torch.dtype:
    return torch.uint8 if x.dtype == torch.uint8 else torch.bool


def all_dims(x: torch.Tensor, dim: Sequence[int] | None = None, keepdim: bool = False) -> Any:
    """aten::all / all.dims."""
    return reduce(x, "all", dim, keepdim, _bool_dtype(x))


def all_dim(x: torch.Tensor, dim: int, keepdim: bool = False) -> torch.Tensor:
    """aten::all.dim."""
    return reduce(x, "all", dim, keepdim, _bool_dtype(x))


def any_dims(x: torch.Tensor, dim: Sequence[int] | None = None, keepdim: bool = False) -> Any:
    """aten::any / any.dims."""
    return reduce(x, "any", dim, keepdim, _bool_dtype(x))


def any_dim(x: torch.Tensor, dim: int, keepdim: bool = False) -> torch.Tensor:
    """aten::any.dim."""
    return reduce(x, "any", dim, keepdim, _bool_dtype(x))


REGISTRATIONS: Final[tuple[Registration, ...]] = (
    Registration("sum", sum),
    Registration("sum.dim_IntList", sum_dim),
    Registration("mean", mean),
    Registration("mean.dim", mean_dim),
    Registration("prod", prod),
    Registration("prod.dim_int", prod_dim),
    Registration("amax", amax, condition=is_floating_input),
    Registration("amin", amin, condition=is_floating_input),
    Registration("max", max_all, condition=is_floating_input),
    Registration("min", min_all, condition=is_floating_input),
    *entries(all_dims, "all", "all.dims"),
    Registration("all.dim", all_dim),
    *entries(any_dims, "any", "any.dims"),
    Registration("any.dim", any_dim),
)
