"""arange: out[i] = start + i * step, written by one kernel into ATen's preallocated output."""

from __future__ import annotations

import math
from typing import Any, Final

import torch
import triton
import triton.language as tl

from gems_kernels.backends import current_vendor, launch_config, tuning
from gems_kernels.ops.registering import Registration
from gems_kernels.pointwise.rounding import store

__all__ = ["REGISTRATIONS", "arange_out"]


@triton.jit
def _arange_kernel(out, start, step, numel, BLOCK: tl.constexpr):
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    store(out + offsets, start + offsets * step, mask=offsets < numel)


def arange_out(start: Any, end: Any, step: Any = 1, *, out: torch.Tensor) -> torch.Tensor:
    """aten::arange.start_out (which arange(...) calls on every device)."""
    if step == 0:
        raise RuntimeError("step: must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError(
            f"step: upper bound and larger bound inconsistent with step sign "
            f"(start={start}, end={end}, step={step})"
        )
    numel = math.ceil((end - start) / step)
    if out.numel() != numel:
        out.resize_(numel)
    if numel:
        config = launch_config(current_vendor().name, "pointwise")
        block = min(config.block_size, tuning.next_power_of_2(numel))
        is_float = out.is_floating_point()
        _arange_kernel.run(
            out, float(start) if is_float else int(start), float(step) if is_float else int(step),
            numel, BLOCK=block, num_warps=config.num_warps,
            grid=(tuning.cdiv(numel, block),), warmup=False,
        )  # fmt: skip
    return out


REGISTRATIONS: Final[tuple[Registration, ...]] = (Registration("arange.start_out", arange_out),)
