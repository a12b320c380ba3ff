"""2-D and 1-D convolution, forward and backward (aten::convolution,
aten::convolution_backward), as implicit GEMMs: no im2col buffer, each tile of the product
gathers its operand from the image. A 1-D convolution is the 2-D one of height 1 (views: the
input (N, C, L) read as (N, C, 1, L), the weight likewise).

- forward: rows (n, oh, ow), columns the output channels of a group, the sum over
  (input channel, r, s); the bias is added in the epilogue;
- input gradient: the same kernel with the image and output roles swapped (``TRANSPOSED``): rows
  (n, h, w), columns the input channels, the sum over (output channel, r, s), where an output
  position takes part only when ``h + padding - r * dilation`` is a multiple of the stride;
- weight gradient: rows the output channels, columns (input channel, r, s), the sum over
  (n, oh, ow); the bias gradient is a gems sum over (n, oh, ow).

Every operand is read through its strides (channels-last included); groups (depthwise too) are
the second grid axis. Accumulation in float32.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import torch
import triton
import triton.language as tl

from gems_kernels.backends import current_vendor, tuning
from gems_kernels.ops import reductions
from gems_kernels.ops.matmul import dot_precision
from gems_kernels.ops.registering import Registration
from gems_kernels.pointwise.rounding import store

__all__ = [
    "REGISTRATIONS",
    "convolution",
    "convolution_backward",
    "is_conv2d",
    "is_conv2d_backward",
]

_DTYPES: Final = frozenset((torch.float16, torch.bfloat16, torch.float32))


@triton.jit
def _conv_kernel(
    src, weight, out, bias,
    batch, src_channels, src_h, src_w,  # the gathered operand: image, or output gradient
    out_channels, out_h, out_w,  # per group: output channels, or input channels
    kernel_h, kernel_w,
    stride_h, stride_w, pad_h, pad_w, dil_h, dil_w,
    s_n, s_c, s_h, s_w,
    w_col, w_red, w_r, w_s, w_group,
    o_n, o_c, o_h, o_w,
    TRANSPOSED: tl.constexpr, HAS_BIAS: tl.constexpr, PRECISION: tl.constexpr,
    UPCAST: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):  # fmt: skip
    """out[n, g * out_channels + col, y, x] = sum over (red, r, s) of the gathered source
    times the weight; ``src_channels`` is per group too."""
    pid = tl.program_id(0)
    group = tl.program_id(1)
    blocks_n = tl.cdiv(out_channels, BLOCK_N)
    rows = (pid // blocks_n) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = (pid % blocks_n) * BLOCK_N + tl.arange(0, BLOCK_N)
    spatial = out_h * out_w
    row_ok = rows < batch * spatial
    n = rows // spatial
    y = (rows % spatial) // out_w
    x = rows % out_w
    taps = kernel_h * kernel_w
    reduced = src_channels * taps
    src_base = src + n.to(tl.int64)[:, None] * s_n + (group * src_channels).to(tl.int64) * s_c
    w_base = weight + group.to(tl.int64) * w_group + cols[None, :] * w_col
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for start in range(0, reduced, BLOCK_K):
        ks = start + tl.arange(0, BLOCK_K)
        k_ok = ks < reduced
        channel = ks // taps
        r = (ks % taps) // kernel_w
        s = ks % kernel_w
        if TRANSPOSED:
            # Output positions (sy, sx) whose window puts tap (r, s) on pixel (y, x).
            ty = y[:, None] + pad_h - r[None, :] * dil_h
            tx = x[:, None] + pad_w - s[None, :] * dil_w
            ty = tl.where(ty >= 0, ty, 0)
            tx = tl.where(tx >= 0, tx, 0)
            sy = ty // stride_h
            sx = tx // stride_w
            ok = (
                (y[:, None] + pad_h - r[None, :] * dil_h >= 0)
                & (x[:, None] + pad_w - s[None, :] * dil_w >= 0)
                & (sy * stride_h == ty)
                & (sx * stride_w == tx)
                & (sy < src_h)
                & (sx < src_w)
            )
        else:
            sy = y[:, None] * stride_h - pad_h + r[None, :] * dil_h
            sx = x[:, None] * stride_w - pad_w + s[None, :] * dil_w
            ok = (sy >= 0) & (sy < src_h) & (sx >= 0) & (sx < src_w)
        a_mask = row_ok[:, None] & k_ok[None, :] & ok
        a_tile = tl.load(
            src_base + channel[None, :] * s_c + sy * s_h + sx * s_w, mask=a_mask, other=0.0
        )
        b_mask = k_ok[:, None] & (cols[None, :] < out_channels)
        b_tile = tl.load(
            w_base + channel[:, None] * w_red + r[:, None] * w_r + s[:, None] * w_s,
            mask=b_mask,
            other=0.0,
        )
        if UPCAST:
            a_tile, b_tile = a_tile.to(tl.float32), b_tile.to(tl.float32)
        acc = tl.dot(a_tile, b_tile, acc, input_precision=PRECISION)
    out_cols = group * out_channels + cols
    if HAS_BIAS:
        acc += tl.load(bias + out_cols, mask=cols < out_channels, other=0.0).to(tl.float32)[None, :]
    offsets = n.to(tl.int64)[:, None] * o_n + out_cols[None, :] * o_c + (y * o_h + x * o_w)[:, None]
    store(out + offsets, acc, mask=row_ok[:, None] & (cols < out_channels)[None, :])


@triton.jit
def _conv_weight_grad_kernel(
    grad, image, out,
    batch, channels, height, width,  # image; channels per group
    out_channels, out_h, out_w,  # output gradient; channels per group
    kernel_h, kernel_w,
    stride_h, stride_w, pad_h, pad_w, dil_h, dil_w,
    g_n, g_c, g_h, g_w,
    i_n, i_c, i_h, i_w,
    o_k, o_c, o_r, o_s,
    PRECISION: tl.constexpr, UPCAST: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):  # fmt: skip
    """out[g * out_channels + k, c, r, s] = sum over (n, oh, ow) of grad * image."""
    pid = tl.program_id(0)
    group = tl.program_id(1)
    taps = kernel_h * kernel_w
    columns = channels * taps
    blocks_n = tl.cdiv(columns, BLOCK_N)
    rows = (pid // blocks_n) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = (pid % blocks_n) * BLOCK_N + tl.arange(0, BLOCK_N)
    row_ok = rows < out_channels
    col_ok = cols < columns
    c = cols // taps
    r = (cols % taps) // kernel_w
    s = cols % kernel_w
    spatial = out_h * out_w
    reduced = batch * spatial
    grad_base = grad + (group * out_channels + rows).to(tl.int64)[:, None] * g_c
    image_base = image + (group * channels + c).to(tl.int64)[None, :] * i_c
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for start in range(0, reduced, BLOCK_K):
        ks = start + tl.arange(0, BLOCK_K)
        k_ok = ks < reduced
        n = ks // spatial
        oy = (ks % spatial) // out_w
        ox = ks % out_w
        a_tile = tl.load(
            grad_base + (n.to(tl.int64) * g_n + oy * g_h + ox * g_w)[None, :],
            mask=row_ok[:, None] & k_ok[None, :],
            other=0.0,
        )
        iy = oy[:, None] * stride_h - pad_h + r[None, :] * dil_h
        ix = ox[:, None] * stride_w - pad_w + s[None, :] * dil_w
        b_mask = k_ok[:, None] & col_ok[None, :] & (iy >= 0) & (iy < height)
        b_mask = b_mask & (ix >= 0) & (ix < width)
        b_tile = tl.load(
            image_base + n.to(tl.int64)[:, None] * i_n + iy * i_h + ix * i_w,
            mask=b_mask,
            other=0.0,
        )
        if UPCAST:
            a_tile, b_tile = a_tile.to(tl.float32), b_tile.to(tl.float32)
        acc = tl.dot(a_tile, b_tile, acc, input_precision=PRECISION)
    offsets = (group * out_channels + rows).to(tl.int64)[:, None] * o_k + (
        c * o_c + r * o_r + s * o_s
    )[None, :]
    store(out + offsets, acc, mask=row_ok[:, None] & col_ok[None, :])


def _pair(values: Sequence[int]) -> tuple[int, int]:
    return (values[0], values[0]) if len(values) == 1 else (values[0], values[1])


Geometry = tuple[tuple[int, int], tuple[int, int], tuple[int, int]]
"""(stride, padding, dilation), each as (height, width)."""


def _geometry(stride: Sequence[int], padding: Sequence[int], dilation: Sequence[int]) -> Geometry:
    return _pair(stride), _pair(padding), _pair(dilation)


def _output_sizes(input: torch.Tensor, weight: torch.Tensor, geometry: Geometry) -> list[int]:
    """(OH, OW) of the convolution."""
    stride, padding, dilation = geometry
    return [
        (input.shape[2 + d] + 2 * padding[d] - dilation[d] * (weight.shape[2 + d] - 1) - 1)
        // stride[d]
        + 1
        for d in (0, 1)
    ]


def _as_2d(
    tensor: torch.Tensor,
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
) -> tuple[torch.Tensor, Geometry]:
    """``tensor`` and the geometry of a 2-D convolution: a 3-D tensor (1-D convolution) gains a
    height of 1, its stride, padding and dilation a first entry of 1, 0 and 1."""
    if tensor.dim() == 3:
        return tensor.unsqueeze(2), ((1, stride[0]), (0, padding[0]), (1, dilation[0]))
    return tensor, _geometry(stride, padding, dilation)


def is_conv2d(
    input: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    transposed: bool,
    output_padding: Sequence[int],
    groups: int,
) -> bool:
    """Condition: a batched, non-transposed 2-D or 1-D convolution of one floating dtype with
    shapes ATen accepts (anything else goes to ATen, which raises its own error for bad
    shapes)."""
    if transposed or input.dim() not in (3, 4) or weight.dim() != input.dim():
        return False
    if input.dtype not in _DTYPES or weight.dtype != input.dtype:
        return False
    if bias is not None and bias.dtype != input.dtype:
        return False
    if groups < 1 or weight.shape[0] % groups or input.shape[1] != weight.shape[1] * groups:
        return False
    if bias is not None and (bias.dim() != 1 or bias.shape[0] != weight.shape[0]):
        return False
    if min(stride) < 1 or min(dilation) < 1 or min(padding) < 0:
        return False
    if input.dim() == 3 and not len(stride) == len(padding) == len(dilation) == 1:
        return False
    image, geometry = _as_2d(input, stride, padding, dilation)
    return min(_output_sizes(image, _as_2d(weight, stride, padding, dilation)[0], geometry)) > 0


def is_conv2d_backward(
    grad_output: torch.Tensor,
    input: torch.Tensor,
    weight: torch.Tensor,
    bias_sizes: Any,
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    transposed: bool,
    output_padding: Sequence[int],
    groups: int,
    output_mask: Sequence[bool],
) -> bool:
    """Condition: the backward of a convolution :func:`is_conv2d` takes."""
    return grad_output.dtype == input.dtype and is_conv2d(
        input, weight, None, stride, padding, dilation, transposed, output_padding, groups
    )


def _blocks() -> tuple[int, int, int, int]:
    """(BLOCK_M, BLOCK_N, BLOCK_K, num_warps): the interpreter wants few, large tiles."""
    return (32, 16, 32, 1) if current_vendor().name == "cpu" else (64, 64, 32, 4)


def _gemm(
    src: torch.Tensor,
    weight: torch.Tensor,
    out: torch.Tensor,
    bias: torch.Tensor | None,
    groups: int,
    geometry: Geometry,
    transposed: bool,
) -> None:
    (stride_h, stride_w), (pad_h, pad_w), (dil_h, dil_w) = geometry
    batch, src_channels, src_h, src_w = src.shape
    out_channels, out_h, out_w = out.shape[1] // groups, out.shape[2], out.shape[3]
    w_col, w_red = (weight.stride(1), weight.stride(0)) if transposed else weight.stride()[:2]
    w_group = weight.stride(0) * (weight.shape[0] // groups)
    block_m, block_n, block_k, warps = _blocks()
    grid = (
        tuning.cdiv(batch * out_h * out_w, block_m) * tuning.cdiv(out_channels, block_n),
        groups,
    )
    _conv_kernel.run(
        src, weight, out, bias,
        batch, src_channels // groups, src_h, src_w, out_channels, out_h, out_w,
        weight.shape[2], weight.shape[3],
        stride_h, stride_w, pad_h, pad_w, dil_h, dil_w,
        *src.stride(), w_col, w_red, weight.stride(2), weight.stride(3), w_group, *out.stride(),
        TRANSPOSED=transposed, HAS_BIAS=bias is not None, PRECISION=dot_precision(src.dtype),
        UPCAST=current_vendor().name == "cpu",
        BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, num_warps=warps,
        grid=grid, warmup=False,
    )  # fmt: skip


def _like_input(input: torch.Tensor, shape: Sequence[int]) -> torch.Tensor:
    """A result in the input's memory format (channels-last stays channels-last)."""
    channels_last = input.is_contiguous(memory_format=torch.channels_last) and not (
        input.is_contiguous()
    )
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    return torch.empty(shape, dtype=input.dtype, device=input.device, memory_format=fmt)


def convolution(
    input: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    transposed: bool,
    output_padding: Sequence[int],
    groups: int,
) -> torch.Tensor:
    """aten::convolution for a 2-D or 1-D, non-transposed convolution (see
    :func:`is_conv2d`)."""
    if input.dim() == 3:
        input, geometry = _as_2d(input, stride, padding, dilation)
        out = convolution(input, weight.unsqueeze(2), bias, *geometry, transposed,
                          output_padding, groups)  # fmt: skip
        return out.squeeze(2)
    geometry = _geometry(stride, padding, dilation)
    sizes = _output_sizes(input, weight, geometry)
    out = _like_input(input, (input.shape[0], weight.shape[0], *sizes))
    if out.numel():
        if input.shape[1] == 0 or weight.shape[2] * weight.shape[3] == 0:
            out.zero_() if bias is None else out.copy_(bias.view(1, -1, 1, 1).expand_as(out))
        else:
            _gemm(input, weight, out, bias, groups, geometry, transposed=False)
    return out


def _weight_grad(
    grad: torch.Tensor,
    input: torch.Tensor,
    weight: torch.Tensor,
    groups: int,
    geometry: Geometry,
) -> torch.Tensor:
    (stride_h, stride_w), (pad_h, pad_w), (dil_h, dil_w) = geometry
    out = torch.empty(weight.shape, dtype=weight.dtype, device=weight.device)
    batch, channels, height, width = input.shape
    out_channels = weight.shape[0] // groups
    columns = weight.shape[1] * weight.shape[2] * weight.shape[3]
    block_m, block_n, block_k, warps = _blocks()
    grid = (tuning.cdiv(out_channels, block_m) * tuning.cdiv(columns, block_n), groups)
    _conv_weight_grad_kernel.run(
        grad, input, out,
        batch, channels // groups, height, width, out_channels, grad.shape[2], grad.shape[3],
        weight.shape[2], weight.shape[3],
        stride_h, stride_w, pad_h, pad_w, dil_h, dil_w,
        *grad.stride(), *input.stride(), *out.stride(),
        PRECISION=dot_precision(input.dtype), UPCAST=current_vendor().name == "cpu",
        BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, num_warps=warps,
        grid=grid, warmup=False,
    )  # fmt: skip
    return out


def convolution_backward(
    grad_output: torch.Tensor,
    input: torch.Tensor,
    weight: torch.Tensor,
    bias_sizes: Any,
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    transposed: bool,
    output_padding: Sequence[int],
    groups: int,
    output_mask: Sequence[bool],
) -> tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor | None]:
    """aten::convolution_backward: (grad_input, grad_weight, grad_bias) as ``output_mask``
    asks, for the convolutions :func:`is_conv2d` takes."""
    if input.dim() == 3:
        input, geometry = _as_2d(input, stride, padding, dilation)
        grads = convolution_backward(
            grad_output.unsqueeze(2), input, weight.unsqueeze(2), bias_sizes, *geometry,
            transposed, output_padding, groups, output_mask,
        )  # fmt: skip
        grad_input, grad_weight, grad_bias = grads
        return (
            None if grad_input is None else grad_input.squeeze(2),
            None if grad_weight is None else grad_weight.squeeze(2),
            grad_bias,
        )
    geometry = _geometry(stride, padding, dilation)
    empty = grad_output.numel() == 0
    grad_input = grad_weight = grad_bias = None
    if output_mask[0]:
        grad_input = _like_input(input, input.shape)
        if grad_input.numel():
            if empty or weight.numel() == 0:
                grad_input.zero_()
            else:
                # The input's gradient is the convolution of the output gradient with the
                # weight read transposed (its rows and columns of channels swapped).
                _gemm(grad_output, weight, grad_input, None, groups, geometry, transposed=True)
    if output_mask[1]:
        if empty or weight.numel() == 0:
            grad_weight = torch.zeros_like(weight)
        else:
            grad_weight = _weight_grad(grad_output, input, weight, groups, geometry)
    if output_mask[2]:
        grad_bias = reductions.sum_dim(grad_output, [0, 2, 3])  # float32 sums for halves
    return grad_input, grad_weight, grad_bias


REGISTRATIONS: Final[tuple[Registration, ...]] = (
    # One entry point above mkldnn/thnn/slow_conv2d on CPU and cuDNN on GPUs.
    Registration("convolution", convolution, condition=is_conv2d),
    Registration(
        "convolution_backward",
        convolution_backward,
        condition=is_conv2d_backward,
    ),
)
