"""2-D pooling, forward and backward: max pooling with indices, average pooling and adaptive
average pooling (aten::max_pool2d_with_indices, avg_pool2d, _adaptive_avg_pool2d and their
backward ops).

One forward kernel walks each output's window (``MODE`` max, average or adaptive); one backward
kernel gathers, for each input element, the outputs whose window holds it, so overlapping
windows need no atomics and the result is deterministic. Max pooling follows ATen: NaN wins
and the first position of the window is the index when every value is -inf; average pooling
divides as ATen does (``count_include_pad``, ``divisor_override``, windows clipped to the padded
image); adaptive windows are [floor(i * in / out), ceil((i + 1) * in / out)).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, NamedTuple

import torch
import triton
import triton.language as tl

from gems_kernels.backends import current_vendor, launch_config, tuning
from gems_kernels.ops.registering import Registration
from gems_kernels.pointwise.rounding import store

__all__ = [
    "REGISTRATIONS",
    "adaptive_avg_pool2d",
    "adaptive_avg_pool2d_backward",
    "avg_pool2d",
    "avg_pool2d_backward",
    "fits_adaptive",
    "fits_adaptive_backward",
    "fits_avg_pool",
    "fits_avg_pool_backward",
    "fits_max_pool",
    "fits_max_pool_backward",
    "lanes_nchw",
    "max_pool2d_with_indices",
    "max_pool2d_with_indices_backward",
]

_DTYPES: Final = frozenset((torch.float16, torch.bfloat16, torch.float32))
_MAX: Final = 0
_AVG: Final = 1
_ADAPTIVE: Final = 2


@triton.jit
def lanes_nchw(total, channels, height, width, BLOCK: tl.constexpr):
    """This program's lanes of a contiguous (N, C, H, W) walk: (live, n, c, y, x)."""
    flat = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    x = flat % width
    y = (flat // width) % height
    c = (flat // (width * height)) % channels
    return flat < total, flat // (width * height * channels), c, y, x


@triton.jit
def _avg_divisor(oy, ox, height, width, stride_h, stride_w, pad_h, pad_w, kernel_h, kernel_w,
                 COUNT_PAD: tl.constexpr, DIVISOR: tl.constexpr):  # fmt: skip
    """ATen's divisor of the average window of output (oy, ox)."""
    y0 = oy * stride_h - pad_h
    x0 = ox * stride_w - pad_w
    y1 = tl.minimum(y0 + kernel_h, height + pad_h)
    x1 = tl.minimum(x0 + kernel_w, width + pad_w)
    if DIVISOR > 0:
        return tl.zeros_like(oy).to(tl.float32) + DIVISOR
    elif COUNT_PAD:
        return ((y1 - y0) * (x1 - x0)).to(tl.float32)
    else:
        rows = tl.minimum(y1, height) - tl.maximum(y0, 0)
        cols = tl.minimum(x1, width) - tl.maximum(x0, 0)
        return tl.maximum(rows * cols, 1).to(tl.float32)


@triton.jit
def _adaptive_start(i, size, out_size):
    return (i * size) // out_size


@triton.jit
def _adaptive_end(i, size, out_size):
    return ((i + 1) * size + out_size - 1) // out_size


@triton.jit
def _pool_kernel(
    x, out, indices, total, channels, height, width, out_h, out_w,
    kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w,
    x_n, x_c, x_h, x_w, o_n, o_c, o_h, o_w,
    MODE: tl.constexpr, COUNT_PAD: tl.constexpr, DIVISOR: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    """One output element per lane; for the adaptive mode kernel_h/kernel_w bound the window."""
    live, n, c, oy, ox = lanes_nchw(total, channels, out_h, out_w, BLOCK)
    base = x + n * x_n + c * x_c
    if MODE == 2:
        y0 = _adaptive_start(oy, height, out_h)
        x0 = _adaptive_start(ox, width, out_w)
        y1 = _adaptive_end(oy, height, out_h)
        x1 = _adaptive_end(ox, width, out_w)
    else:
        y0 = oy * stride_h - pad_h
        x0 = ox * stride_w - pad_w
    best = tl.full([BLOCK], float("-inf"), tl.float32)
    best_index = tl.full([BLOCK], -1, tl.int64)
    total_sum = tl.zeros([BLOCK], tl.float32)
    for kh in range(0, kernel_h):
        for kw in range(0, kernel_w):
            iy = y0 + kh * dil_h
            ix = x0 + kw * dil_w
            if MODE == 2:
                ok = live & (iy < y1) & (ix < x1)
            else:
                ok = live & (iy >= 0) & (iy < height) & (ix >= 0) & (ix < width)
            value = tl.load(base + iy * x_h + ix * x_w, mask=ok, other=0.0).to(tl.float32)
            if MODE == 0:
                take = ok & ((value > best) | (value != value) | (best_index < 0))
                best = tl.where(take, value, best)
                best_index = tl.where(take, iy * width + ix, best_index)
            else:
                total_sum += tl.where(ok, value, 0.0)
    offsets = n * o_n + c * o_c + oy * o_h + ox * o_w
    if MODE == 0:
        store(out + offsets, best, mask=live)
        store(indices + offsets, best_index, mask=live)
    elif MODE == 1:
        divisor = _avg_divisor(oy, ox, height, width, stride_h, stride_w, pad_h, pad_w,
                               kernel_h, kernel_w, COUNT_PAD, DIVISOR)  # fmt: skip
        empty = (tl.minimum(y0 + kernel_h, height) <= tl.maximum(y0, 0)) | (
            tl.minimum(x0 + kernel_w, width) <= tl.maximum(x0, 0)
        )
        store(out + offsets, tl.where(empty, 0.0, total_sum / divisor), mask=live)
    else:
        area = ((y1 - y0) * (x1 - x0)).to(tl.float32)
        store(out + offsets, total_sum / area, mask=live)


@triton.jit
def _pool_backward_kernel(
    grad, indices, grad_in, total, channels, height, width, out_h, out_w,
    kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w,
    g_n, g_c, g_h, g_w, i_n, i_c, i_h, i_w,
    MODE: tl.constexpr, COUNT_PAD: tl.constexpr, DIVISOR: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    """One input element per lane: the sum over the outputs whose window holds it. In the
    adaptive mode kernel_h/kernel_w bound how many outputs' windows hold one input."""
    live, n, c, iy, ix = lanes_nchw(total, channels, height, width, BLOCK)
    base = n * g_n + c * g_c
    acc = tl.zeros([BLOCK], tl.float32)
    for kh in range(0, kernel_h):
        for kw in range(0, kernel_w):
            if MODE == 2:
                oy = _adaptive_start(iy, out_h, height) + kh
                ox = _adaptive_start(ix, out_w, width) + kw
                ok = live & (oy < out_h) & (ox < out_w)
                ok = ok & (_adaptive_start(oy, height, out_h) <= iy)
                ok = ok & (iy < _adaptive_end(oy, height, out_h))
                ok = ok & (_adaptive_start(ox, width, out_w) <= ix)
                ok = ok & (ix < _adaptive_end(ox, width, out_w))
            else:
                ty = iy + pad_h - kh * dil_h
                tx = ix + pad_w - kw * dil_w
                oy = tl.where(ty >= 0, ty, 0) // stride_h
                ox = tl.where(tx >= 0, tx, 0) // stride_w
                ok = live & (ty >= 0) & (tx >= 0) & (oy * stride_h == ty) & (ox * stride_w == tx)
                ok = ok & (oy < out_h) & (ox < out_w)
            offsets = base + oy * g_h + ox * g_w
            g = tl.load(grad + offsets, mask=ok, other=0.0).to(tl.float32)
            if MODE == 0:
                chosen = tl.load(indices + offsets, mask=ok, other=-1)
                acc += tl.where(ok & (chosen == iy * width + ix), g, 0.0)
            elif MODE == 1:
                divisor = _avg_divisor(oy, ox, height, width, stride_h, stride_w, pad_h, pad_w,
                                       kernel_h, kernel_w, COUNT_PAD, DIVISOR)  # fmt: skip
                acc += tl.where(ok, g / divisor, 0.0)
            else:
                rows = _adaptive_end(oy, height, out_h) - _adaptive_start(oy, height, out_h)
                cols = _adaptive_end(ox, width, out_w) - _adaptive_start(ox, width, out_w)
                acc += tl.where(ok, g / tl.maximum(rows * cols, 1).to(tl.float32), 0.0)
    store(grad_in + n * i_n + c * i_c + iy * i_h + ix * i_w, acc, mask=live)


class _Window(NamedTuple):
    """A pooling's window geometry, each as (height, width)."""

    kernel: tuple[int, int]
    stride: tuple[int, int]
    padding: tuple[int, int]
    dilation: tuple[int, int]
    ceil_mode: bool

    def output_size(self, height: int, width: int) -> tuple[int, int]:
        """ATen's pooling_output_shape in both dims."""
        sizes = []
        for d, size in enumerate((height, width)):
            k, s, p, dl = self.kernel[d], self.stride[d], self.padding[d], self.dilation[d]
            out = (size + 2 * p - dl * (k - 1) - 1 + (s - 1 if self.ceil_mode else 0)) // s + 1
            if self.ceil_mode and (out - 1) * s >= size + p:
                out -= 1
            sizes.append(out)
        return sizes[0], sizes[1]

    def is_valid(self, x: torch.Tensor) -> bool:
        """Shapes ATen accepts (it raises its own error for the others)."""
        if min(self.kernel) < 1 or min(self.stride) < 1 or min(self.dilation) < 1:
            return False
        reach = [(k - 1) * d + 1 for k, d in zip(self.kernel, self.dilation, strict=True)]
        if min(self.padding) < 0 or any(
            p > r // 2 for p, r in zip(self.padding, reach, strict=True)
        ):
            return False
        return min(self.output_size(x.shape[-2], x.shape[-1])) > 0


def _pair(values: int | Sequence[int], default: Sequence[int] | None = None) -> tuple[int, int]:
    if isinstance(values, int):
        return values, values
    if not values and default is not None:
        return _pair(default)
    return (values[0], values[0]) if len(values) == 1 else (values[0], values[1])


def _window(
    kernel_size: Sequence[int],
    stride: Sequence[int] = (),
    padding: int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
    ceil_mode: bool = False,
) -> _Window:
    """An empty stride means the kernel size, as in ATen."""
    return _Window(
        _pair(kernel_size),
        _pair(stride, kernel_size),
        _pair(padding),
        _pair(dilation),
        ceil_mode,
    )


def _is_image(x: torch.Tensor) -> bool:
    return x.dim() in (3, 4) and x.dtype in _DTYPES and x.numel() > 0


def fits_max_pool(
    self: torch.Tensor,
    kernel_size: Sequence[int],
    stride: Sequence[int] = (),
    padding: Sequence[int] = (0,),
    dilation: Sequence[int] = (1,),
    ceil_mode: bool = False,
) -> bool:
    """Condition: a non-empty 3-D or 4-D floating input and a window ATen accepts."""
    return _is_image(self) and _window(kernel_size, stride, padding, dilation, ceil_mode).is_valid(
        self
    )


def fits_max_pool_backward(
    grad_output: torch.Tensor, self: torch.Tensor, *args: Any, **kwargs: Any
) -> bool:
    """Condition: the backward of a max pooling :func:`fits_max_pool` takes."""
    return grad_output.dtype == self.dtype and fits_max_pool(self, *args[:5])


def fits_avg_pool(
    self: torch.Tensor,
    kernel_size: Sequence[int],
    stride: Sequence[int] = (),
    padding: Sequence[int] = (0,),
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> bool:
    """Condition: as :func:`fits_max_pool`, and a positive divisor override if any."""
    if divisor_override is not None and divisor_override <= 0:
        return False
    return _is_image(self) and _window(kernel_size, stride, padding, 1, ceil_mode).is_valid(self)


def fits_avg_pool_backward(
    grad_output: torch.Tensor, self: torch.Tensor, *args: Any, **kwargs: Any
) -> bool:
    """Condition: the backward of an average pooling :func:`fits_avg_pool` takes."""
    return grad_output.dtype == self.dtype and fits_avg_pool(self, *args)


def fits_adaptive(self: torch.Tensor, output_size: Sequence[int]) -> bool:
    """Condition: a non-empty 3-D or 4-D floating input and a positive output size."""
    return _is_image(self) and len(output_size) == 2 and min(output_size) > 0


def fits_adaptive_backward(grad_output: torch.Tensor, self: torch.Tensor) -> bool:
    """Condition: the backward of an adaptive pooling :func:`fits_adaptive` takes."""
    return grad_output.dtype == self.dtype and fits_adaptive(self, grad_output.shape[-2:])


def _as_4d(t: torch.Tensor) -> torch.Tensor:
    return t if t.dim() == 4 else t.unsqueeze(0)


def _empty_like_format(
    like: torch.Tensor, shape: Sequence[int], dtype: torch.dtype | None = None
) -> torch.Tensor:
    """A 4-D result in ``like``'s memory format (channels-last stays channels-last)."""
    channels_last = like.dim() == 4 and not like.is_contiguous()
    channels_last = channels_last and like.is_contiguous(memory_format=torch.channels_last)
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    return torch.empty(shape, dtype=dtype or like.dtype, device=like.device, memory_format=fmt)


def _block(total: int) -> int:
    limit = launch_config(current_vendor().name, "pointwise").block_size
    return min(tuning.next_power_of_2(total), limit)


def _launch_forward(
    x: torch.Tensor, out: torch.Tensor, indices: torch.Tensor | None, window: _Window,
    mode: int, count_pad: bool = True, divisor: int = 0,
) -> None:  # fmt: skip
    channels, height, width = x.shape[1:]
    total = out.numel()
    block = _block(total)
    _pool_kernel.run(
        x, out, indices if indices is not None else out, total, channels, height, width,
        out.shape[2], out.shape[3], *window.kernel, *window.stride, *window.padding,
        *window.dilation, *x.stride(), *out.stride(),
        MODE=mode, COUNT_PAD=count_pad, DIVISOR=divisor, BLOCK=block,
        grid=(tuning.cdiv(total, block),), warmup=False,
    )  # fmt: skip


def _launch_backward(
    grad: torch.Tensor, indices: torch.Tensor | None, grad_in: torch.Tensor, window: _Window,
    mode: int, count_pad: bool = True, divisor: int = 0,
) -> None:  # fmt: skip
    channels, height, width = grad_in.shape[1:]
    total = grad_in.numel()
    block = _block(total)
    _pool_backward_kernel.run(
        grad, indices if indices is not None else grad, grad_in, total, channels, height,
        width, grad.shape[2], grad.shape[3], *window.kernel, *window.stride, *window.padding,
        *window.dilation, *grad.stride(), *grad_in.stride(),
        MODE=mode, COUNT_PAD=count_pad, DIVISOR=divisor, BLOCK=block,
        grid=(tuning.cdiv(total, block),), warmup=False,
    )  # fmt: skip


def _result(t: torch.Tensor, unbatched: bool) -> torch.Tensor:
    return t.squeeze(0) if unbatched else t


def max_pool2d_with_indices(
    self: torch.Tensor,
    kernel_size: Sequence[int],
    stride: Sequence[int] = (),
    padding: Sequence[int] = (0,),
    dilation: Sequence[int] = (1,),
    ceil_mode: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """aten::max_pool2d_with_indices: the maxima and their flat positions in each plane."""
    window = _window(kernel_size, stride, padding, dilation, ceil_mode)
    x = _as_4d(self)
    shape = (*x.shape[:2], *window.output_size(x.shape[2], x.shape[3]))
    out = _empty_like_format(x, shape)
    indices = _empty_like_format(x, shape, torch.int64)
    _launch_forward(x, out, indices, window, _MAX)
    unbatched = self.dim() == 3
    return _result(out, unbatched), _result(indices, unbatched)


def max_pool2d_with_indices_backward(
    grad_output: torch.Tensor,
    self: torch.Tensor,
    kernel_size: Sequence[int],
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    ceil_mode: bool,
    indices: torch.Tensor,
) -> torch.Tensor:
    """aten::max_pool2d_with_indices_backward: each output's gradient to its maximum."""
    window = _window(kernel_size, stride, padding, dilation, ceil_mode)
    x = _as_4d(self)
    grad_in = _empty_like_format(x, x.shape)
    _launch_backward(_as_4d(grad_output), _as_4d(indices), grad_in, window, _MAX)
    return _result(grad_in, self.dim() == 3)


def avg_pool2d(
    self: torch.Tensor,
    kernel_size: Sequence[int],
    stride: Sequence[int] = (),
    padding: Sequence[int] = (0,),
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> torch.Tensor:
    """aten::avg_pool2d."""
    window = _window(kernel_size, stride, padding, 1, ceil_mode)
    x = _as_4d(self)
    out = _empty_like_format(x, (*x.shape[:2], *window.output_size(x.shape[2], x.shape[3])))
    _launch_forward(x, out, None, window, _AVG, count_include_pad, divisor_override or 0)
    return _result(out, self.dim() == 3)


def avg_pool2d_backward(
    grad_output: torch.Tensor,
    self: torch.Tensor,
    kernel_size: Sequence[int],
    stride: Sequence[int],
    padding: Sequence[int],
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: int | None,
) -> torch.Tensor:
    """aten::avg_pool2d_backward: each output's gradient spread over its window."""
    window = _window(kernel_size, stride, padding, 1, ceil_mode)
    x = _as_4d(self)
    grad_in = _empty_like_format(x, x.shape)
    _launch_backward(
        _as_4d(grad_output), None, grad_in, window, _AVG, count_include_pad, divisor_override or 0
    )
    return _result(grad_in, self.dim() == 3)


def _adaptive_bound(size: int, out_size: int) -> int:
    """The most elements of a window (or, with the sizes swapped, the most windows that hold
    one element)."""
    return max((-(-(i + 1) * size // out_size)) - (i * size // out_size) for i in range(out_size))


def adaptive_avg_pool2d(self: torch.Tensor, output_size: Sequence[int]) -> torch.Tensor:
    """aten::_adaptive_avg_pool2d."""
    x = _as_4d(self)
    out_h, out_w = int(output_size[0]), int(output_size[1])
    out = _empty_like_format(x, (*x.shape[:2], out_h, out_w))
    kernel = (_adaptive_bound(x.shape[2], out_h), _adaptive_bound(x.shape[3], out_w))
    _launch_forward(x, out, None, _Window(kernel, (1, 1), (0, 0), (1, 1), False), _ADAPTIVE)
    return _result(out, self.dim() == 3)


def adaptive_avg_pool2d_backward(grad_output: torch.Tensor, self: torch.Tensor) -> torch.Tensor:
    """aten::_adaptive_avg_pool2d_backward."""
    x, grad = _as_4d(self), _as_4d(grad_output)
    out_h, out_w = grad.shape[2], grad.shape[3]
    grad_in = _empty_like_format(x, x.shape)
    kernel = (_adaptive_bound(out_h, x.shape[2]), _adaptive_bound(out_w, x.shape[3]))
    _launch_backward(grad, None, grad_in, _Window(kernel, (1, 1), (0, 0), (1, 1), False), _ADAPTIVE)
    return _result(grad_in, self.dim() == 3)


REGISTRATIONS: Final[tuple[Registration, ...]] = (
    Registration("max_pool2d_with_indices", max_pool2d_with_indices, condition=fits_max_pool),
    Registration(
        "max_pool2d_with_indices_backward",
        max_pool2d_with_indices_backward,
        condition=fits_max_pool_backward,
    ),
    Registration("avg_pool2d", avg_pool2d, condition=fits_avg_pool),
    Registration("avg_pool2d_backward", avg_pool2d_backward, condition=fits_avg_pool_backward),
    Registration("_adaptive_avg_pool2d", adaptive_avg_pool2d, condition=fits_adaptive),
    Registration(
        "_adaptive_avg_pool2d_backward",
        adaptive_avg_pool2d_backward,
        condition=fits_adaptive_backward,
    ),
)
