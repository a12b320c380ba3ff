"""Indexed reads and writes of whole slices along one dim: index_select and index_add.

Each op views its operands as (outer, dim, inner); one program handles one output row. gather,
scatter and advanced indexing live in :mod:`scatter_gather` and :mod:`advanced_indexing`.
"""

from __future__ import annotations

from typing import Any, Final

import torch
import triton
import triton.language as tl

from gems_kernels.backends import current_vendor, launch_config, tuning
from gems_kernels.ops.registering import Registration
from gems_kernels.ops.row_layout import normalize_dims
from gems_kernels.pointwise.rounding import store

__all__ = ["REGISTRATIONS", "index_add", "index_select", "is_float32_target"]


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
        store(out + program * inner + cols, tl.load(source + cols, mask=mask), mask=mask)


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


def _block(size: int) -> tuple[int, int]:
    config = launch_config(current_vendor().name, "row")
    return min(tuning.next_power_of_2(max(size, 1)), config.block_size), config.num_warps


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
        _index_select_kernel.run(
            self.contiguous(), flat, out, self.shape[axis], flat.numel(), inner,
            BLOCK_N=block, num_warps=warps,
            grid=(outer * flat.numel(),), warmup=False,
        )  # fmt: skip
    return out


def index_add(
    self: torch.Tensor, dim: int, index: torch.Tensor, source: torch.Tensor, *, alpha: Any = 1
) -> torch.Tensor:
    """aten::index_add: a copy of ``self`` with alpha * source rows added at ``index``."""
    if self.dim() == 0:
        # A 0-d self is a single row of a 1-d tensor, and its source is 0-d as well.
        if source.dim() != 0:
            raise RuntimeError(
                "source tensor shape must match self tensor shape, excluding the specified "
                f"dimension. Got self.shape = [] source.shape = {list(source.shape)}"
            )
        return index_add(self.reshape(1), dim, index, source.reshape(-1), alpha=alpha).reshape(())
    (axis,) = normalize_dims(dim, self.dim())
    _check_range(index, self.shape[axis], "index")
    out = self.to(torch.float32, copy=True).contiguous()
    flat = index.reshape(-1).contiguous()
    outer, inner = _outer_inner(self, axis)
    if source.numel():
        block, warps = _block(inner)
        _index_add_kernel.run(
            out, flat, source.contiguous(), alpha, self.shape[axis], flat.numel(), inner,
            BLOCK_N=block, num_warps=warps,
            grid=(outer * flat.numel(),), warmup=False,
        )  # fmt: skip
    return out.to(self.dtype)


def is_float32_target(self: Any, *args: Any, **kwargs: Any) -> bool:
    """Condition of index_add: a float32 target (its atomic adds are float32)."""
    return bool(self.dtype == torch.float32)


REGISTRATIONS: Final[tuple[Registration, ...]] = (
    Registration("index_select", index_select),
    Registration("index_add", index_add, condition=is_float32_target),
)
