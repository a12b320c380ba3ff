"""2-D upsampling, nearest and bilinear, forward and backward (aten::upsample_nearest2d,
upsample_bilinear2d and their backward ops).

Source positions follow ATen's formulas: nearest takes floor(dst * scale) (clamped), with
scale = 1 / scales_h when given, else in / out, in float32 as ATen computes it; bilinear's
source is scale * dst with ``align_corners``, else max(scale * (dst + 0.5) - 0.5, 0), blending
the two neighbours in each dim. The backward adds each output's gradient into its source
pixels with float32 atomics (as ATen's GPU kernels do), then stores the input's dtype.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import torch
import triton
import triton.language as tl

from gems_kernels.backends import current_vendor, launch_config, tuning
from gems_kernels.ops import copies
from gems_kernels.ops.pooling import lanes_nchw
from gems_kernels.ops.registering import Registration
from gems_kernels.pointwise.rounding import store

__all__ = [
    "REGISTRATIONS",
    "fits_upsample",
    "fits_upsample_backward",
    "upsample_bilinear2d",
    "upsample_bilinear2d_backward",
    "upsample_nearest2d",
    "upsample_nearest2d_backward",
]

_DTYPES: Final = frozenset((torch.float16, torch.bfloat16, torch.float32))


@triton.jit
def _nearest(dst, scale, size):
    return tl.minimum(tl.floor(dst.to(tl.float32) * scale).to(tl.int64), size - 1)


@triton.jit
def _linear(dst, scale, size, ALIGN: tl.constexpr):
    """(low index, high index, weight of the high one)."""
    if ALIGN:
        real = scale * dst.to(tl.float32)
    else:
        real = tl.maximum(scale * (dst.to(tl.float32) + 0.5) - 0.5, 0.0)
    low = real.to(tl.int64)
    high = low + tl.where(low < size - 1, 1, 0)
    return low, high, real - low.to(tl.float32)


@triton.jit
def _upsample_kernel(
    x, out, grad_in, total, channels, height, width, out_h, out_w, scale_h, scale_w,
    x_n, x_c, x_h, x_w, o_n, o_c, o_h, o_w,
    BILINEAR: tl.constexpr, ALIGN: tl.constexpr, BACKWARD: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    """One output element per lane. Forward: out from the input x. Backward: x is the output
    gradient, scattered into the float32 contiguous ``grad_in``."""
    live, n, c, oy, ox = lanes_nchw(total, channels, out_h, out_w, BLOCK)
    plane = (n * channels + c) * height * width
    if BACKWARD:
        g = tl.load(x + n * x_n + c * x_c + oy * x_h + ox * x_w, mask=live, other=0.0)
        g = g.to(tl.float32)
        if BILINEAR:
            y0, y1, wy = _linear(oy, scale_h, height, ALIGN)
            x0, x1, wx = _linear(ox, scale_w, width, ALIGN)
            tl.atomic_add(grad_in + plane + y0 * width + x0, g * (1 - wy) * (1 - wx), mask=live)
            tl.atomic_add(grad_in + plane + y0 * width + x1, g * (1 - wy) * wx, mask=live)
            tl.atomic_add(grad_in + plane + y1 * width + x0, g * wy * (1 - wx), mask=live)
            tl.atomic_add(grad_in + plane + y1 * width + x1, g * wy * wx, mask=live)
        else:
            sy = _nearest(oy, scale_h, height)
            sx = _nearest(ox, scale_w, width)
            tl.atomic_add(grad_in + plane + sy * width + sx, g, mask=live)
    else:
        base = x + n * x_n + c * x_c
        if BILINEAR:
            y0, y1, wy = _linear(oy, scale_h, height, ALIGN)
            x0, x1, wx = _linear(ox, scale_w, width, ALIGN)
            v00 = tl.load(base + y0 * x_h + x0 * x_w, mask=live, other=0.0).to(tl.float32)
            v01 = tl.load(base + y0 * x_h + x1 * x_w, mask=live, other=0.0).to(tl.float32)
            v10 = tl.load(base + y1 * x_h + x0 * x_w, mask=live, other=0.0).to(tl.float32)
            v11 = tl.load(base + y1 * x_h + x1 * x_w, mask=live, other=0.0).to(tl.float32)
            top = v00 * (1 - wx) + v01 * wx
            bottom = v10 * (1 - wx) + v11 * wx
            value = top * (1 - wy) + bottom * wy
        else:
            sy = _nearest(oy, scale_h, height)
            sx = _nearest(ox, scale_w, width)
            value = tl.load(base + sy * x_h + sx * x_w, mask=live, other=0.0)
        store(out + n * o_n + c * o_c + oy * o_h + ox * o_w, value, mask=live)


def fits_upsample(self: torch.Tensor, output_size: Sequence[int], *args: Any) -> bool:
    """Condition: a non-empty 4-D floating input and a positive output size."""
    return (
        self.dim() == 4
        and self.dtype in _DTYPES
        and self.numel() > 0
        and len(output_size) == 2
        and min(output_size) > 0
    )


def fits_upsample_backward(
    grad_output: torch.Tensor, output_size: Sequence[int], input_size: Sequence[int], *args: Any
) -> bool:
    """Condition: the backward of an upsampling :func:`fits_upsample` takes."""
    return (
        grad_output.dim() == 4
        and grad_output.dtype in _DTYPES
        and len(input_size) == 4
        and min(input_size) > 0
        and tuple(grad_output.shape[2:]) == tuple(output_size)
    )


def _nearest_scale(size: int, out_size: int, scale: float | None) -> float:
    """ATen's compute_scales_value, rounded to float32 as its kernels use it."""
    value = 1.0 / scale if scale is not None and scale > 0 else size / out_size
    return float(torch.tensor(value, dtype=torch.float32))


def _linear_scale(size: int, out_size: int, align: bool, scale: float | None) -> float:
    """ATen's area_pixel_compute_scale."""
    if align:
        return (size - 1) / (out_size - 1) if out_size > 1 else 0.0
    return _nearest_scale(size, out_size, scale)


def _scales(
    image: Sequence[int],
    output_size: Sequence[int],
    scales: tuple[float | None, float | None],
    align: bool | None,
) -> tuple[float, float]:
    """(height, width) scales: nearest's when ``align`` is None, else bilinear's."""
    if align is None:
        return (
            _nearest_scale(image[2], output_size[0], scales[0]),
            _nearest_scale(image[3], output_size[1], scales[1]),
        )
    return (
        _linear_scale(image[2], output_size[0], align, scales[0]),
        _linear_scale(image[3], output_size[1], align, scales[1]),
    )


def _launch(
    source: torch.Tensor, out: torch.Tensor, grid_like: torch.Tensor, scales: tuple[float, float],
    bilinear: bool, align: bool, backward: bool, image: Sequence[int],
) -> None:  # fmt: skip
    """``grid_like`` is the output-sized tensor (out, or the output gradient)."""
    total = grid_like.numel()
    block = min(
        tuning.next_power_of_2(total),
        launch_config(current_vendor().name, "pointwise").block_size,
    )
    _upsample_kernel.run(
        source, out, out, total, image[1], image[2], image[3], grid_like.shape[2],
        grid_like.shape[3], *scales, *source.stride(), *grid_like.stride(),
        BILINEAR=bilinear, ALIGN=align, BACKWARD=backward, BLOCK=block,
        grid=(tuning.cdiv(total, block),), warmup=False,
    )  # fmt: skip


def _forward(
    x: torch.Tensor, output_size: Sequence[int], scales: tuple[float, float], bilinear: bool,
    align: bool,
) -> torch.Tensor:  # fmt: skip
    channels_last = x.is_contiguous(memory_format=torch.channels_last) and not x.is_contiguous()
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    out = torch.empty(
        (*x.shape[:2], *output_size), dtype=x.dtype, device=x.device, memory_format=fmt
    )
    _launch(x, out, out, scales, bilinear, align, False, x.shape)
    return out


def _backward(
    grad: torch.Tensor, input_size: Sequence[int], scales: tuple[float, float], bilinear: bool,
    align: bool,
) -> torch.Tensor:  # fmt: skip
    sums = torch.empty(list(input_size), dtype=torch.float32, device=grad.device)
    copies.zero_(sums)
    _launch(grad, sums, grad, scales, bilinear, align, True, input_size)
    if grad.dtype == torch.float32:
        return sums
    out = torch.empty(list(input_size), dtype=grad.dtype, device=grad.device)
    return copies.copy_(out, sums)


def upsample_nearest2d(
    self: torch.Tensor,
    output_size: Sequence[int],
    scales_h: float | None = None,
    scales_w: float | None = None,
) -> torch.Tensor:
    """aten::upsample_nearest2d."""
    scales = _scales(self.shape, output_size, (scales_h, scales_w), None)
    return _forward(self, output_size, scales, False, False)


def upsample_nearest2d_backward(
    grad_output: torch.Tensor,
    output_size: Sequence[int],
    input_size: Sequence[int],
    scales_h: float | None = None,
    scales_w: float | None = None,
) -> torch.Tensor:
    """aten::upsample_nearest2d_backward."""
    scales = _scales(input_size, output_size, (scales_h, scales_w), None)
    return _backward(grad_output, input_size, scales, False, False)


def upsample_bilinear2d(
    self: torch.Tensor,
    output_size: Sequence[int],
    align_corners: bool,
    scales_h: float | None = None,
    scales_w: float | None = None,
) -> torch.Tensor:
    """aten::upsample_bilinear2d."""
    scales = _scales(self.shape, output_size, (scales_h, scales_w), align_corners)
    return _forward(self, output_size, scales, True, align_corners)


def upsample_bilinear2d_backward(
    grad_output: torch.Tensor,
    output_size: Sequence[int],
    input_size: Sequence[int],
    align_corners: bool,
    scales_h: float | None = None,
    scales_w: float | None = None,
) -> torch.Tensor:
    """aten::upsample_bilinear2d_backward."""
    scales = _scales(input_size, output_size, (scales_h, scales_w), align_corners)
    return _backward(grad_output, input_size, scales, True, align_corners)


# Each function implements the ATen overload of the same name.
REGISTRATIONS: Final[tuple[Registration, ...]] = (
    *(
        Registration(impl.__name__, impl, condition=fits_upsample)
        for impl in (upsample_nearest2d, upsample_bilinear2d)
    ),
    *(
        Registration(impl.__name__, impl, condition=fits_upsample_backward)
        for impl in (upsample_nearest2d_backward, upsample_bilinear2d_backward)
    ),
)
