"""Vector norms of order 1, 2 and infinity over any dims (aten::linalg_vector_norm)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Final

import torch
import triton
import triton.language as tl

from gems_kernels.backends import current_vendor, launch_config, tuning
from gems_kernels.ops.registering import Registration
from gems_kernels.ops.row_layout import accumulator, normalize_dims, to_rows
from gems_kernels.pointwise.rounding import store

__all__ = ["REGISTRATIONS", "SUPPORTED_ORDERS", "linalg_vector_norm", "supports_order"]

SUPPORTED_ORDERS = (1.0, 2.0, math.inf)


@triton.jit
def _norm_rows_kernel(
    x, out, num_rows, row_size,
    ORDER: tl.constexpr, ACC: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    """ORDER 1: sum |x|; 2: sqrt(sum x^2); 0 stands for infinity: max |x|."""
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < num_rows
    base = rows.to(tl.int64)[:, None] * row_size
    acc = tl.zeros([BLOCK_M], ACC)
    for start in range(0, row_size, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = row_mask[:, None] & (cols < row_size)[None, :]
        values = tl.abs(tl.load(x + base + cols[None, :], mask=mask, other=0).to(ACC))
        if ORDER == 1:
            acc += tl.sum(values, axis=1)
        elif ORDER == 2:
            acc += tl.sum(values * values, axis=1)
        else:
            acc = tl.maximum(acc, tl.max(values, axis=1))
    if ORDER == 2:
        acc = tl.sqrt(acc)
    store(out + rows, acc, mask=row_mask)


def supports_order(x: torch.Tensor, ord: Any = 2, *args: Any, **kwargs: Any) -> bool:
    """Condition: a floating tensor and an order of 1, 2 or infinity."""
    return x.is_floating_point() and float(ord) in SUPPORTED_ORDERS


def linalg_vector_norm(
    x: torch.Tensor,
    ord: Any = 2,
    dim: Sequence[int] | None = None,
    keepdim: bool = False,
    *,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """aten::linalg_vector_norm for ord in {1, 2, inf}."""
    order = float(ord)
    if order not in SUPPORTED_ORDERS:
        raise NotImplementedError(f"ord: only {SUPPORTED_ORDERS} are implemented, got {ord!r}")
    layout = to_rows(x, normalize_dims(dim, x.dim()), keepdim)
    out_dtype = dtype or x.dtype
    out = torch.empty(layout.shape, dtype=out_dtype, device=x.device)
    if layout.num_rows == 0:
        return out
    config = launch_config(current_vendor().name, "reduction")
    block_n = min(tuning.next_power_of_2(max(layout.row_size, 1)), config.block_size)
    block_m = max(1, min(config.block_size // block_n, tuning.next_power_of_2(layout.num_rows)))
    _norm_rows_kernel.run(
        layout.rows, out, layout.num_rows, layout.row_size,
        ORDER=0 if order == math.inf else int(order), ACC=accumulator(out_dtype),
        BLOCK_M=block_m, BLOCK_N=block_n, num_warps=config.num_warps,
        grid=(tuning.cdiv(layout.num_rows, block_m),), warmup=False,
    )  # fmt: skip
    return out


REGISTRATIONS: Final[tuple[Registration, ...]] = (
    Registration("linalg_vector_norm", linalg_vector_norm, condition=supports_order),
)
