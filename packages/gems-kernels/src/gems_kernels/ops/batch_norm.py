"""Batch normalisation, forward and backward (aten::native_batch_norm and its backward), in
training and evaluation mode.

One program per channel reduces over (N, spatial) in two passes (the mean, then the centred sum
of squares, in float32) and, in training, updates the running statistics as ATen does:
``running = momentum * batch + (1 - momentum) * running`` with the unbiased variance. It also
writes the per-channel coefficients the pointwise kernel applies, so the forward is two launches
and so is the backward.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import torch
import triton
import triton.language as tl

from gems_kernels.backends import current_vendor, launch_config, tuning
from gems_kernels.ops.registering import Registration
from gems_kernels.pointwise import pointwise_dynamic
from gems_kernels.pointwise.rounding import store

__all__ = [
    "REGISTRATIONS",
    "batch_norm_backward",
    "batch_norm_forward",
    "is_batch_norm",
    "is_batch_norm_backward",
]

_DTYPES: Final = frozenset((torch.float16, torch.bfloat16, torch.float32))
_HALVES: Final = frozenset((torch.float16, torch.bfloat16))


@triton.jit
def _channel_offsets(start, c, spatial, s_n, s_c, s_hw, BLOCK: tl.constexpr):
    j = start + tl.arange(0, BLOCK)
    n = j // spatial
    return n.to(tl.int64) * s_n + c.to(tl.int64) * s_c + (j % spatial) * s_hw


@triton.jit
def _forward_channel_kernel(
    x, save_mean, save_invstd, mean32, scale32, shift32, weight, bias, running_mean, running_var,
    count, spatial, s_n, s_c, s_hw, momentum, eps,
    TRAINING: tl.constexpr, HAS_WEIGHT: tl.constexpr, HAS_BIAS: tl.constexpr,
    HAS_RUNNING: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    """Channel statistics (from the batch in training, the running ones otherwise) and the
    coefficients of y = (x - mean) * scale + shift."""
    c = tl.program_id(0)
    if TRAINING:
        total = tl.zeros([BLOCK], tl.float32)
        for start in range(0, count, BLOCK):
            offsets = _channel_offsets(start, c, spatial, s_n, s_c, s_hw, BLOCK)
            mask = start + tl.arange(0, BLOCK) < count
            total += tl.load(x + offsets, mask=mask, other=0.0).to(tl.float32)
        mean = tl.sum(total, axis=0) / count
        squares = tl.zeros([BLOCK], tl.float32)
        for start in range(0, count, BLOCK):
            offsets = _channel_offsets(start, c, spatial, s_n, s_c, s_hw, BLOCK)
            mask = start + tl.arange(0, BLOCK) < count
            centred = tl.load(x + offsets, mask=mask, other=0.0).to(tl.float32) - mean
            squares += tl.where(mask, centred * centred, 0.0)
        var = tl.sum(squares, axis=0) / count
        invstd = 1.0 / tl.sqrt(var + eps)
        store(save_mean + c, mean)
        store(save_invstd + c, invstd)
        if HAS_RUNNING:
            unbiased = var * count / tl.maximum(count - 1, 1)
            old_mean = tl.load(running_mean + c).to(tl.float32)
            old_var = tl.load(running_var + c).to(tl.float32)
            store(running_mean + c, momentum * mean + (1.0 - momentum) * old_mean)
            store(running_var + c, momentum * unbiased + (1.0 - momentum) * old_var)
    else:
        mean = tl.load(running_mean + c).to(tl.float32)
        invstd = 1.0 / tl.sqrt(tl.load(running_var + c).to(tl.float32) + eps)
    scale = invstd
    if HAS_WEIGHT:
        scale = scale * tl.load(weight + c).to(tl.float32)
    shift = 0.0
    if HAS_BIAS:
        shift = tl.load(bias + c).to(tl.float32)
    store(mean32 + c, mean)
    store(scale32 + c, scale)
    store(shift32 + c, shift)


@triton.jit
def _backward_channel_kernel(
    grad, x, mean_in, invstd_in, weight, grad_weight, grad_bias, mean32, mean_grad32, k32,
    scale32, count, spatial, g_n, g_c, g_hw, s_n, s_c, s_hw, eps,
    TRAINING: tl.constexpr, HAS_WEIGHT: tl.constexpr, WEIGHT_GRAD: tl.constexpr,
    BIAS_GRAD: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    """Per channel: sum(dy), sum(dy * (x - mean)), the weight and bias gradients and the
    coefficients of dx = (dy - mean_grad - (x - mean) * k) * scale."""
    c = tl.program_id(0)
    mean = tl.load(mean_in + c).to(tl.float32)
    if TRAINING:
        invstd = tl.load(invstd_in + c).to(tl.float32)
    else:
        invstd = 1.0 / tl.sqrt(tl.load(invstd_in + c).to(tl.float32) + eps)
    sum_dy = tl.zeros([BLOCK], tl.float32)
    sum_dy_xmu = tl.zeros([BLOCK], tl.float32)
    for start in range(0, count, BLOCK):
        mask = start + tl.arange(0, BLOCK) < count
        dy = tl.load(
            grad + _channel_offsets(start, c, spatial, g_n, g_c, g_hw, BLOCK), mask=mask, other=0.0
        ).to(tl.float32)
        xs = tl.load(
            x + _channel_offsets(start, c, spatial, s_n, s_c, s_hw, BLOCK), mask=mask, other=0.0
        ).to(tl.float32)
        sum_dy += dy
        sum_dy_xmu += tl.where(mask, dy * (xs - mean), 0.0)
    total_dy = tl.sum(sum_dy, axis=0)
    total_dy_xmu = tl.sum(sum_dy_xmu, axis=0)
    if WEIGHT_GRAD:
        store(grad_weight + c, total_dy_xmu * invstd)
    if BIAS_GRAD:
        store(grad_bias + c, total_dy)
    scale = invstd
    if HAS_WEIGHT:
        scale = scale * tl.load(weight + c).to(tl.float32)
    if TRAINING:
        store(mean_grad32 + c, total_dy / count)
        store(k32 + c, invstd * invstd * total_dy_xmu / count)
    else:
        tl.store(mean_grad32 + c, 0.0)
        tl.store(k32 + c, 0.0)
    store(mean32 + c, mean)
    store(scale32 + c, scale)


@pointwise_dynamic(is_tensor=[True, True, True, True], promotions=[((0,), "DEFAULT")])
@triton.jit
def _normalize(x, mean, scale, shift):
    return (x.to(tl.float32) - mean) * scale + shift


@pointwise_dynamic(is_tensor=[True, True, True, True, True, True], promotions=[((0,), "DEFAULT")])
@triton.jit
def _input_grad(dy, x, mean, mean_grad, k, scale):
    centred = x.to(tl.float32) - mean
    return (dy.to(tl.float32) - mean_grad - centred * k) * scale


def _floating(*tensors: torch.Tensor | None) -> bool:
    return all(t is None or t.dtype in _DTYPES for t in tensors)


def is_batch_norm(
    input: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    running_mean: torch.Tensor | None,
    running_var: torch.Tensor | None,
    training: bool,
    momentum: float,
    eps: float,
) -> bool:
    """Condition: a non-empty input of at least 2 dims and float16/bfloat16/float32 operands,
    with running statistics when not training (ATen raises its own errors otherwise)."""
    if input.dim() < 2 or input.numel() == 0 or input.shape[1] == 0:
        return False
    if not training and (running_mean is None or running_var is None):
        return False
    channels = input.shape[1]
    given = [t for t in (weight, bias, running_mean, running_var) if t is not None]
    return _floating(input, *given) and all(t.shape == (channels,) for t in given)


def is_batch_norm_backward(
    grad_out: torch.Tensor,
    input: torch.Tensor,
    weight: torch.Tensor | None,
    running_mean: torch.Tensor | None,
    running_var: torch.Tensor | None,
    save_mean: torch.Tensor | None,
    save_invstd: torch.Tensor | None,
    train: bool,
    eps: float,
    output_mask: Sequence[bool],
) -> bool:
    """Condition: the backward of a batch norm :func:`is_batch_norm` takes, with the saved
    statistics in training."""
    if grad_out.shape != input.shape or not _floating(grad_out):
        return False
    if train and (save_mean is None or save_invstd is None or save_mean.numel() == 0):
        return False
    return is_batch_norm(input, weight, None, running_mean, running_var, train, 0.0, eps)


def _stats_dtype(input: torch.Tensor, *params: torch.Tensor | None) -> torch.dtype:
    """ATen's dtype for the saved statistics: float32 for half inputs on GPUs, and on the CPU
    when a parameter is float32; the input's otherwise."""
    if input.dtype not in _HALVES:
        return input.dtype
    float32_param = any(p is not None and p.dtype == torch.float32 for p in params)
    if input.device.type != "cpu" or float32_param:
        return torch.float32
    return input.dtype


def _as_3d(t: torch.Tensor) -> torch.Tensor:
    """(N, C, spatial) without a copy where the strides allow it."""
    try:
        return t.view(t.shape[0], t.shape[1], -1)
    except RuntimeError:
        return t.contiguous().view(t.shape[0], t.shape[1], -1)


def _block(count: int) -> int:
    limit = launch_config(current_vendor().name, "row").block_size
    return min(tuning.next_power_of_2(count), limit)


def _channels(input: torch.Tensor, count: int) -> list[torch.Tensor]:
    """``count`` float32 per-channel buffers."""
    buffer = torch.empty((count, input.shape[1]), dtype=torch.float32, device=input.device)
    return list(buffer.unbind(0))


def _broadcast(vector: torch.Tensor, dim: int) -> torch.Tensor:
    return vector.view(1, -1, *([1] * (dim - 2)))


def batch_norm_forward(
    input: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    running_mean: torch.Tensor | None,
    running_var: torch.Tensor | None,
    training: bool,
    momentum: float,
    eps: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """aten::native_batch_norm: (output, save_mean, save_invstd); the saved statistics are
    empty in evaluation mode, as ATen's."""
    rows = _as_3d(input)
    channels, spatial = rows.shape[1], rows.shape[2]
    count = rows.shape[0] * spatial
    stats = _stats_dtype(input, weight, bias, running_mean, running_var)
    size = channels if training else 0
    save_mean = torch.empty(size, dtype=stats, device=input.device)
    save_invstd = torch.empty(size, dtype=stats, device=input.device)
    mean32, scale32, shift32 = _channels(input, 3)
    has_running = running_mean is not None and running_var is not None
    _forward_channel_kernel.run(
        rows, save_mean, save_invstd, mean32, scale32, shift32, weight, bias, running_mean,
        running_var, count, spatial, *rows.stride(), float(momentum), float(eps),
        TRAINING=training, HAS_WEIGHT=weight is not None, HAS_BIAS=bias is not None,
        HAS_RUNNING=has_running, BLOCK=_block(count), num_warps=4,
        grid=(channels,), warmup=False,
    )  # fmt: skip
    dim = input.dim()
    out = torch.empty_like(input)
    _normalize(
        input, _broadcast(mean32, dim), _broadcast(scale32, dim), _broadcast(shift32, dim),
        out0=out,
    )  # fmt: skip
    return out, save_mean, save_invstd


def batch_norm_backward(
    grad_out: torch.Tensor,
    input: torch.Tensor,
    weight: torch.Tensor | None,
    running_mean: torch.Tensor | None,
    running_var: torch.Tensor | None,
    save_mean: torch.Tensor | None,
    save_invstd: torch.Tensor | None,
    train: bool,
    eps: float,
    output_mask: Sequence[bool],
) -> tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor | None]:
    """aten::native_batch_norm_backward: (grad_input, grad_weight, grad_bias) as
    ``output_mask`` asks; evaluation mode differentiates through the running statistics."""
    rows, grads = _as_3d(input), _as_3d(grad_out)
    channels, spatial = rows.shape[1], rows.shape[2]
    count = rows.shape[0] * spatial
    param_dtype = weight.dtype if weight is not None else input.dtype
    grad_weight = grad_bias = None
    if output_mask[1]:
        grad_weight = torch.empty(channels, dtype=param_dtype, device=input.device)
    if output_mask[2]:
        grad_bias = torch.empty(channels, dtype=param_dtype, device=input.device)
    mean32, mean_grad32, k32, scale32 = _channels(input, 4)
    mean_in: Any = save_mean if train else running_mean
    invstd_in: Any = save_invstd if train else running_var
    _backward_channel_kernel.run(
        grads, rows, mean_in, invstd_in, weight, grad_weight, grad_bias, mean32, mean_grad32,
        k32, scale32, count, spatial, *grads.stride(), *rows.stride(), float(eps),
        TRAINING=train, HAS_WEIGHT=weight is not None, WEIGHT_GRAD=grad_weight is not None,
        BIAS_GRAD=grad_bias is not None, BLOCK=_block(count), num_warps=4,
        grid=(channels,), warmup=False,
    )  # fmt: skip
    grad_input = None
    if output_mask[0]:
        dim = input.dim()
        grad_input = torch.empty_like(input)
        _input_grad(
            grad_out, input, _broadcast(mean32, dim), _broadcast(mean_grad32, dim),
            _broadcast(k32, dim), _broadcast(scale32, dim), out0=grad_input,
        )  # fmt: skip
    return grad_input, grad_weight, grad_bias


REGISTRATIONS: Final[tuple[Registration, ...]] = (
    Registration("native_batch_norm", batch_norm_forward, condition=is_batch_norm),
    Registration(
        "native_batch_norm_backward",
        batch_norm_backward,
        condition=is_batch_norm_backward,
    ),
)
