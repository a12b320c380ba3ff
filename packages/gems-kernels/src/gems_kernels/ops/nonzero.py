"""nonzero and masked_select: a running count of the selected elements (gems cumsum) gives each
one its output position; one kernel writes the positions' indices or values there. The result
size is read back to the host once, as in ATen."""

from __future__ import annotations

import math
from typing import Final

import torch
import triton
import triton.language as tl

from gems_kernels.backends import current_vendor, launch_config, tuning
from gems_kernels.ops import comparisons, copies
from gems_kernels.ops.registering import Registration
from gems_kernels.ops.scans import cumsum
from gems_kernels.pointwise.rounding import store

__all__ = ["REGISTRATIONS", "is_nonzero_input", "is_selectable", "masked_select", "nonzero"]


@triton.jit
def _compact_kernel(counts, x, out, strides, sizes, numel,
                    NDIM: tl.constexpr, INDICES: tl.constexpr, BLOCK: tl.constexpr):  # fmt: skip
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < numel
    count = tl.load(counts + offsets, mask=inside, other=0)
    before = tl.load(counts + offsets - 1, mask=inside & (offsets > 0), other=0)
    keep = inside & (count != before)
    position = count - 1
    if INDICES:
        for d in tl.static_range(NDIM):
            index = (offsets // tl.load(strides + d)) % tl.load(sizes + d)
            store(out + position * NDIM + d, index, mask=keep)
    else:
        store(out + position, tl.load(x + offsets, mask=keep), mask=keep)


def is_nonzero_input(self: torch.Tensor) -> bool:
    """Condition: at least one dim (a 0-d input goes to ATen)."""
    return self.dim() > 0


def is_selectable(self: torch.Tensor, mask: torch.Tensor) -> bool:
    """Condition: a bool mask on the same device, both broadcastable."""
    if mask.dtype != torch.bool or mask.device != self.device:
        return False
    try:
        torch.broadcast_shapes(self.shape, mask.shape)
    except RuntimeError:
        return False
    return True


def _compact(
    flags: torch.Tensor, x: torch.Tensor | None, shape: tuple[int, ...], out_dtype: torch.dtype
) -> torch.Tensor:
    """The selected flat positions of ``flags`` (contiguous, 1-d) as indices into ``shape``
    (x None) or as the values of ``x`` (contiguous, same size)."""
    counts = cumsum(flags, 0)
    numel = flags.numel()
    total = int(counts[-1]) if numel else 0
    ndim = len(shape)
    out_shape = (total, ndim) if x is None else (total,)
    out = torch.empty(out_shape, dtype=out_dtype, device=flags.device)
    if total:
        strides = [math.prod(shape[d + 1 :]) for d in range(ndim)]
        config = launch_config(current_vendor().name, "pointwise")
        block = min(config.block_size, tuning.next_power_of_2(numel))
        table = torch.tensor([*strides, *shape] or [1], dtype=torch.int64, device=flags.device)
        _compact_kernel.run(
            counts, x if x is not None else counts, out, table, table[ndim:] if ndim else table,
            numel, NDIM=ndim, INDICES=x is None, BLOCK=block, num_warps=config.num_warps,
            grid=(tuning.cdiv(numel, block),), warmup=False,
        )  # fmt: skip
    return out


def nonzero(self: torch.Tensor) -> torch.Tensor:
    """aten::nonzero: (count, ndim) int64 indices of the nonzero elements, in row-major order."""
    flags = comparisons.NE.functional(self, 0).reshape(-1)
    return _compact(flags, None, tuple(self.shape), torch.int64)


def masked_select(self: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """aten::masked_select: the elements of ``self`` where ``mask`` (both broadcast) is True."""
    shape = torch.broadcast_shapes(self.shape, mask.shape)
    values = copies.to_copy(self.expand(shape), memory_format=torch.contiguous_format)
    flags = copies.to_copy(mask.expand(shape), memory_format=torch.contiguous_format)
    return _compact(flags.reshape(-1), values.reshape(-1), tuple(shape), self.dtype)


REGISTRATIONS: Final[tuple[Registration, ...]] = (
    Registration("nonzero", nonzero, condition=is_nonzero_input),
    Registration("masked_select", masked_select, condition=is_selectable),
)
