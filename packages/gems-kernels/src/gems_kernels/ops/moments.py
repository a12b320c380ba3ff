"""Variance and mean in one pass over each row: var_mean, var, std."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Final

import torch
import triton
import triton.language as tl

from gems_kernels.backends import current_vendor, launch_config, tuning
from gems_kernels.ops.reductions import is_floating_input
from gems_kernels.ops.registering import Registration
from gems_kernels.ops.row_layout import accumulator, normalize_dims, to_rows
from gems_kernels.pointwise.rounding import store

__all__ = ["REGISTRATIONS", "std", "var", "var_mean"]


@triton.jit
def _var_mean_rows_kernel(
    x, var_out, mean_out, num_rows, row_size, divisor,
    ACC: tl.constexpr, TAKE_SQRT: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < num_rows
    base = rows.to(tl.int64)[:, None] * row_size
    total = tl.zeros([BLOCK_M], ACC)
    for start in range(0, row_size, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = row_mask[:, None] & (cols < row_size)[None, :]
        total += tl.sum(tl.load(x + base + cols[None, :], mask=mask, other=0).to(ACC), axis=1)
    mean = total / row_size
    squares = tl.zeros([BLOCK_M], ACC)
    for start in range(0, row_size, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = row_mask[:, None] & (cols < row_size)[None, :]
        values = tl.load(x + base + cols[None, :], mask=mask, other=0).to(ACC)
        deviation = tl.where(mask, values - mean[:, None], 0.0)
        squares += tl.sum(deviation * deviation, axis=1)
    result = squares / divisor
    if TAKE_SQRT:
        result = tl.sqrt(result)
    store(var_out + rows, result, mask=row_mask)
    store(mean_out + rows, mean, mask=row_mask)


def _moments(
    x: torch.Tensor,
    dim: Sequence[int] | None,
    correction: Any,
    keepdim: bool,
    take_sqrt: bool,
) -> tuple[torch.Tensor, torch.Tensor]:
    layout = to_rows(x, normalize_dims(dim, x.dim()), keepdim)
    spread = torch.empty(layout.shape, dtype=x.dtype, device=x.device)
    mean = torch.empty(layout.shape, dtype=x.dtype, device=x.device)
    if layout.num_rows == 0:
        return spread, mean
    divisor = max(0.0, layout.row_size - (1.0 if correction is None else float(correction)))
    config = launch_config(current_vendor().name, "reduction")
    block_n = min(tuning.next_power_of_2(max(layout.row_size, 1)), config.block_size)
    block_m = max(1, min(config.block_size // block_n, tuning.next_power_of_2(layout.num_rows)))
    _var_mean_rows_kernel.run(
        layout.rows, spread, mean, layout.num_rows, layout.row_size,
        divisor if divisor > 0 else math.nan,
        ACC=accumulator(x.dtype), TAKE_SQRT=take_sqrt, BLOCK_M=block_m, BLOCK_N=block_n,
        num_warps=config.num_warps,
        grid=(tuning.cdiv(layout.num_rows, block_m),), warmup=False,
    )  # fmt: skip
    return spread, mean


def var_mean(
    x: torch.Tensor,
    dim: Sequence[int] | None = None,
    *,
    correction: Any = None,
    keepdim: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """aten::var_mean.correction (``correction=None`` means 1, Bessel's correction)."""
    return _moments(x, dim, correction, keepdim, take_sqrt=False)


def var(
    x: torch.Tensor,
    dim: Sequence[int] | None = None,
    *,
    correction: Any = None,
    keepdim: bool = False,
) -> torch.Tensor:
    """aten::var.correction."""
    return _moments(x, dim, correction, keepdim, take_sqrt=False)[0]


def std(
    x: torch.Tensor,
    dim: Sequence[int] | None = None,
    *,
    correction: Any = None,
    keepdim: bool = False,
) -> torch.Tensor:
    """aten::std.correction."""
    return _moments(x, dim, correction, keepdim, take_sqrt=True)[0]


REGISTRATIONS: Final[tuple[Registration, ...]] = (
    Registration("var_mean.correction", var_mean, condition=is_floating_input),
    Registration("var.correction", var, condition=is_floating_input),
    Registration("std.correction", std, condition=is_floating_input),
)
