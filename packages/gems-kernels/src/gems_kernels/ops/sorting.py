"""sort and topk along one dim for rows that fit one block.

Each value becomes an order-preserving integer (its float32 bits with the sign folded), shifted
above its column index into one int64 key; ``tl.sort`` on the keys orders by value and then by
index, so the sort is stable and indices come out of the low bits. Larger rows and integer
inputs stay in ATen through the condition.
"""

from __future__ import annotations

from typing import Any, Final

import torch
import triton
import triton.language as tl

from gems_kernels.backends import current_vendor, tuning
from gems_kernels.ops.registering import Registration
from gems_kernels.ops.row_layout import normalize_dims
from gems_kernels.pointwise.rounding import store

__all__ = [
    "MAX_ROW",
    "REGISTRATIONS",
    "sort",
    "sort_fits",
    "sort_stable",
    "sort_stable_fits",
    "topk",
    "topk_fits",
]

MAX_ROW: Final = 4096


@triton.jit
def _sort_rows_kernel(x, values_out, indices_out, row_size, keep,
                      DESCENDING: tl.constexpr, BLOCK_N: tl.constexpr):  # fmt: skip
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < row_size
    values = tl.load(x + row * row_size + cols, mask=mask, other=0.0).to(tl.float32)
    bits = values.to(tl.int32, bitcast=True)
    ordered = bits ^ ((bits >> 31) & 0x7FFFFFFF)
    if DESCENDING:
        ordered = ~ordered
    # The signed 32-bit order key above 13 index bits (MAX_ROW = 4096 < 2^13); padding sorts last.
    key = tl.where(mask, (ordered.to(tl.int64) << 13) | cols.to(tl.int64), 9223372036854775807)
    key = tl.sort(key, 0)
    index = key & 0x1FFF
    ordered_back = (key >> 13).to(tl.int32)
    if DESCENDING:
        ordered_back = ~ordered_back
    bits_back = ordered_back ^ ((ordered_back >> 31) & 0x7FFFFFFF)
    result = bits_back.to(tl.float32, bitcast=True)
    out_mask = cols < keep
    store(values_out + row * keep + cols, result, mask=out_mask)
    store(indices_out + row * keep + cols, index, mask=out_mask)


def _fits(x: torch.Tensor, dim: int) -> bool:
    if x.dtype not in (torch.float16, torch.bfloat16, torch.float32) or x.dim() == 0:
        return False
    return -x.dim() <= dim < x.dim() and x.shape[dim] <= MAX_ROW


def sort_fits(self: torch.Tensor, dim: int = -1, *args: Any, **kwargs: Any) -> bool:
    """Condition for sort: float rows of at most :data:`MAX_ROW` elements."""
    return _fits(self, kwargs.get("dim", dim))


def sort_stable_fits(self: torch.Tensor, **kwargs: Any) -> bool:
    """Condition for sort.stable (its arguments are keyword-only)."""
    return _fits(self, kwargs.get("dim", -1))


def topk_fits(self: torch.Tensor, k: int, dim: int = -1, *args: Any, **kwargs: Any) -> bool:
    """Condition for topk."""
    return _fits(self, dim)


def _sorted_rows(
    x: torch.Tensor, dim: int, descending: bool, keep: int | None
) -> tuple[torch.Tensor, torch.Tensor]:
    if x.dim() == 0:
        return x.clone(), torch.zeros((), dtype=torch.int64, device=x.device)
    (axis,) = normalize_dims(dim, x.dim())
    rows = x.movedim(axis, -1).contiguous()
    row_size = rows.shape[-1]
    if row_size > MAX_ROW:
        raise NotImplementedError(f"sort: rows longer than {MAX_ROW} are not implemented")
    count = row_size if keep is None else keep
    shape = (*rows.shape[:-1], count)
    values = torch.empty(shape, dtype=x.dtype, device=x.device)
    indices = torch.empty(shape, dtype=torch.int64, device=x.device)
    if values.numel():
        _sort_rows_kernel.run(
            rows, values, indices, row_size, count, DESCENDING=descending,
            BLOCK_N=tuning.next_power_of_2(row_size),
            num_warps=1 if current_vendor().name == "cpu" else 4,
            grid=(rows.numel() // row_size,), warmup=False,
        )  # fmt: skip
    return values.movedim(-1, axis), indices.movedim(-1, axis)


def sort(self: torch.Tensor, dim: int = -1, descending: bool = False) -> tuple[Any, Any]:
    """aten::sort (stable)."""
    return _sorted_rows(self, dim, descending, None)


def sort_stable(
    self: torch.Tensor, *, stable: bool | None = None, dim: int = -1, descending: bool = False
) -> tuple[Any, Any]:
    """aten::sort.stable (always stable)."""
    return _sorted_rows(self, dim, descending, None)


def topk(
    self: torch.Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True
) -> tuple[Any, Any]:
    """aten::topk: the k largest (or smallest) values in order, ties by lowest index."""
    size = self.shape[dim] if self.dim() else 1
    if not 0 <= k <= size:
        raise RuntimeError(f"k: selected index k={k} out of range for a dimension of size {size}")
    return _sorted_rows(self, dim, largest, k)


REGISTRATIONS: Final[tuple[Registration, ...]] = (
    Registration("sort", sort, condition=sort_fits),
    Registration("sort.stable", sort_stable, condition=sort_stable_fits),
    Registration("topk", topk, condition=topk_fits),
)
