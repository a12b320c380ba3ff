"""Scans: inclusive prefix sums along one dim (aten::cumsum), carrying totals across blocks."""

from __future__ import annotations

from typing import Final

import torch
import triton
import triton.language as tl

from gems_kernels.backends import current_vendor, launch_config, tuning
from gems_kernels.ops.registering import Registration
from gems_kernels.ops.row_layout import accumulator, normalize_dims
from gems_kernels.pointwise.rounding import store

__all__ = ["REGISTRATIONS", "cumsum"]


@triton.jit
def _cumsum_rows_kernel(x, out, row_size, ACC: tl.constexpr, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    carry = tl.zeros([1], ACC)
    for start in range(0, row_size, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = cols < row_size
        values = tl.load(x + row * row_size + cols, mask=mask, other=0).to(ACC)
        running = tl.cumsum(values, axis=0) + carry
        store(out + row * row_size + cols, running, mask=mask)
        carry += tl.sum(values, axis=0)


def cumsum(x: torch.Tensor, dim: int, *, dtype: torch.dtype | None = None) -> torch.Tensor:
    """aten::cumsum (integer and bool inputs sum in int64, as in ATen)."""
    out_dtype = dtype or (x.dtype if x.is_floating_point() else torch.int64)
    if x.dim() == 0:
        return x.to(out_dtype).clone()
    (axis,) = normalize_dims(dim, x.dim())
    moved = x.movedim(axis, -1).contiguous()
    out = torch.empty(moved.shape, dtype=out_dtype, device=x.device)
    row_size = moved.shape[-1] if moved.dim() else 1
    num_rows = moved.numel() // row_size if row_size else 0
    if num_rows:
        config = launch_config(current_vendor().name, "row")
        block_n = min(tuning.next_power_of_2(row_size), config.block_size)
        _cumsum_rows_kernel.run(
            moved, out, row_size, ACC=accumulator(out_dtype), BLOCK_N=block_n,
            num_warps=config.num_warps,
            grid=(num_rows,), warmup=False,
        )  # fmt: skip
    return out.movedim(-1, axis)


REGISTRATIONS: Final[tuple[Registration, ...]] = (Registration("cumsum", cumsum),)
