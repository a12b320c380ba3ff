"""Dropout: a Philox mask drawn in the kernel, seeded from torch's generator (so
``torch.manual_seed`` makes it reproducible), and its backward."""

from __future__ import annotations

from typing import Final

import torch
import triton
import triton.language as tl

from gems_kernels.backends import current_vendor, launch_config, tuning
from gems_kernels.ops.reductions import is_floating_input
from gems_kernels.ops.registering import Registration
from gems_kernels.pointwise import pointwise_dynamic
from gems_kernels.pointwise.rounding import store

__all__ = ["REGISTRATIONS", "native_dropout", "native_dropout_backward"]


@triton.jit
def _dropout_forward_kernel(x, out, mask_out, numel, p, scale, seed, BLOCK: tl.constexpr):
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    in_range = offsets < numel
    keep = tl.rand(seed, offsets) >= p
    values = tl.load(x + offsets, mask=in_range, other=0.0).to(tl.float32)
    store(out + offsets, tl.where(keep, values * scale, 0.0), mask=in_range)
    store(mask_out + offsets, keep, mask=in_range)


@pointwise_dynamic(is_tensor=[True, True, False], promotions=[((0,), "DEFAULT")])
@triton.jit
def _dropout_backward(grad, mask, scale):
    return tl.where(mask != 0, grad * scale, 0.0)


def native_dropout(
    input: torch.Tensor, p: float, train: bool | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """aten::native_dropout: (output, keep mask)."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p: dropout probability must lie in [0, 1], got {p}")
    if train is False:
        return input.clone(), torch.ones_like(input, dtype=torch.bool)
    x = input.contiguous()
    out = torch.empty_like(x)
    keep = torch.empty(x.shape, dtype=torch.bool, device=x.device)
    numel = x.numel()
    if numel:
        seed = int(torch.randint(0, 2**31 - 1, (1,)).item())
        scale = 0.0 if p == 1.0 else 1.0 / (1.0 - p)
        config = launch_config(current_vendor().name, "pointwise")
        block = min(config.block_size, tuning.next_power_of_2(numel))
        _dropout_forward_kernel.run(
            x,
            out,
            keep,
            numel,
            p,
            scale,
            seed,
            BLOCK=block,
            num_warps=config.num_warps,
            grid=(tuning.cdiv(numel, block),),
            warmup=False,
        )
    return out, keep


def native_dropout_backward(
    grad_output: torch.Tensor, mask: torch.Tensor, scale: float
) -> torch.Tensor:
    """aten::native_dropout_backward: grad * mask * scale."""
    return _dropout_backward(grad_output, mask, scale)


REGISTRATIONS: Final[tuple[Registration, ...]] = (
    Registration("native_dropout", native_dropout, condition=is_floating_input),
    Registration("native_dropout_backward", native_dropout_backward),
)
