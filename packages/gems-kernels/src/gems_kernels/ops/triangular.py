"""triu and tril: keep the elements on one side of a diagonal of the last two dims."""

from __future__ import annotations

from typing import Final

import torch
import triton
import triton.language as tl

from gems_kernels.backends import current_vendor, launch_config, tuning
from gems_kernels.ops.registering import Registration
from gems_kernels.pointwise.rounding import store

__all__ = ["REGISTRATIONS", "tril", "triu"]


@triton.jit
def _triangle_kernel(x, out, rows, cols, diagonal, UPPER: tl.constexpr, BLOCK_N: tl.constexpr):
    program = tl.program_id(0).to(tl.int64)
    row = program % rows
    base = program * cols
    for start in range(0, cols, BLOCK_N):
        col = start + tl.arange(0, BLOCK_N)
        mask = col < cols
        values = tl.load(x + base + col, mask=mask)
        if UPPER:  # noqa: SIM108  (constexpr branch)
            keep = col - row >= diagonal
        else:
            keep = col - row <= diagonal
        store(out + base + col, tl.where(keep, values, tl.zeros_like(values)), mask=mask)


def _triangle(x: torch.Tensor, diagonal: int, upper: bool) -> torch.Tensor:
    name = "triu" if upper else "tril"
    if x.dim() < 2:
        raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
    source = x.contiguous()
    out = torch.empty_like(source)
    rows, cols = x.shape[-2], x.shape[-1]
    if out.numel():
        config = launch_config(current_vendor().name, "row")
        block = min(tuning.next_power_of_2(cols), config.block_size)
        _triangle_kernel.run(
            source, out, rows, cols, diagonal, UPPER=upper, BLOCK_N=block,
            num_warps=config.num_warps,
            grid=(out.numel() // cols,), warmup=False,
        )  # fmt: skip
    return out


def triu(self: torch.Tensor, diagonal: int = 0) -> torch.Tensor:
    """aten::triu."""
    return _triangle(self, diagonal, upper=True)


def tril(self: torch.Tensor, diagonal: int = 0) -> torch.Tensor:
    """aten::tril."""
    return _triangle(self, diagonal, upper=False)


REGISTRATIONS: Final[tuple[Registration, ...]] = (
    Registration("triu", triu),
    Registration("tril", tril),
)
