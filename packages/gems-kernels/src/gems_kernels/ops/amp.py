"""The gradient scaler's device ops: ``_amp_foreach_non_finite_check_and_unscale_`` and
``_amp_update_scale_``; the scale, growth tracker and found-inf flag never leave the device."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import torch
import triton
import triton.language as tl

from gems_kernels.backends import current_vendor, launch_config, tuning
from gems_kernels.ops.registering import Registration
from gems_kernels.pointwise.rounding import store

__all__ = [
    "REGISTRATIONS",
    "amp_update_scale_",
    "is_dense_unscale",
    "non_finite_check_and_unscale_",
]


@triton.jit
def _unscale_kernel(x, found_inf, inv_scale, numel, BLOCK: tl.constexpr):
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < numel
    values = tl.load(x + offsets, mask=mask, other=0.0).to(tl.float32)
    bad = (values != values) | (tl.abs(values) == float("inf"))
    # Every program that sees a non-finite value writes the same 1.0: no atomics needed.
    store(found_inf + offsets * 0, tl.full([BLOCK], 1.0, tl.float32), mask=mask & bad)
    scaled = values * tl.load(inv_scale).to(tl.float32)
    store(x + offsets, scaled, mask=mask)


@triton.jit
def _update_scale_kernel(scale, growth_tracker, found_inf, growth_factor, backoff_factor,
                         growth_interval):  # fmt: skip
    current = tl.load(scale)
    tracker = tl.load(growth_tracker)
    if tl.load(found_inf) != 0:
        store(scale, current * backoff_factor)
        store(growth_tracker, tracker * 0)
    else:
        successful = tracker + 1
        if successful == growth_interval:
            grown = current * growth_factor
            if tl.abs(grown) != float("inf"):
                store(scale, grown)
            store(growth_tracker, tracker * 0)
        else:
            store(growth_tracker, successful)


def non_finite_check_and_unscale_(
    self: Sequence[torch.Tensor], found_inf: torch.Tensor, inv_scale: torch.Tensor
) -> None:
    """aten::_amp_foreach_non_finite_check_and_unscale_: multiply each gradient by inv_scale in
    place and set found_inf to 1 when any element is NaN or infinite."""
    config = launch_config(current_vendor().name, "pointwise")
    for grad in self:
        if not grad.is_contiguous():
            raise NotImplementedError("non_finite_check_and_unscale_: contiguous gradients only")
        numel = grad.numel()
        if numel:
            block = min(config.block_size, tuning.next_power_of_2(numel))
            _unscale_kernel.run(
                grad,
                found_inf,
                inv_scale,
                numel,
                BLOCK=block,
                num_warps=config.num_warps,
                grid=(tuning.cdiv(numel, block),),
                warmup=False,
            )


def is_dense_unscale(
    self: Sequence[torch.Tensor], found_inf: torch.Tensor, inv_scale: torch.Tensor
) -> bool:
    """Condition: contiguous floating gradients and float32 found_inf / inv_scale."""
    return (
        all(g.is_floating_point() and g.is_contiguous() for g in self)
        and found_inf.dtype == torch.float32
        and inv_scale.dtype == torch.float32
    )


def amp_update_scale_(
    self: torch.Tensor,
    growth_tracker: torch.Tensor,
    found_inf: torch.Tensor,
    scale_growth_factor: float,
    scale_backoff_factor: float,
    growth_interval: int,
) -> torch.Tensor:
    """aten::_amp_update_scale_: back off after an inf, grow after ``growth_interval`` clean
    steps (unless the grown scale overflows)."""
    _update_scale_kernel.run(
        self, growth_tracker, found_inf, float(scale_growth_factor), float(scale_backoff_factor),
        int(growth_interval),
        grid=(1,), warmup=False,
    )  # fmt: skip
    return self


REGISTRATIONS: Final[tuple[Registration, ...]] = (
    Registration(
        "_amp_foreach_non_finite_check_and_unscale_",
        non_finite_check_and_unscale_,
        condition=is_dense_unscale,
    ),
    Registration("_amp_update_scale_", amp_update_scale_),
)
