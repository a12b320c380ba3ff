"""Layer normalisation over the trailing dims, forward and backward.

The kernels take a ``CENTER`` flag: without it they compute RMS normalisation, which
``ops/rms_norm.py`` and ``ops/group_norm.py`` launch through the host functions here.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Final, NamedTuple

import torch
import triton
import triton.language as tl

from gems_kernels.backends import current_vendor, launch_config, tuning
from gems_kernels.ops.reductions import is_floating_input
from gems_kernels.ops.registering import Registration
from gems_kernels.pointwise.rounding import store

__all__ = [
    "REGISTRATIONS",
    "layer_norm_backward",
    "layer_norm_forward",
    "normalize_rows",
    "normalize_rows_backward",
    "stats_dtype",
]


@triton.jit
def _store_affine(y, cols, mask, normalized, weight, bias,
                  HAS_WEIGHT: tl.constexpr, HAS_BIAS: tl.constexpr):  # fmt: skip
    result = normalized
    if HAS_WEIGHT:
        result = result * tl.load(weight + cols, mask=mask, other=0.0).to(tl.float32)
    if HAS_BIAS:
        result = result + tl.load(bias + cols, mask=mask, other=0.0).to(tl.float32)
    store(y + cols, result, mask=mask)


@triton.jit
def _layer_norm_forward_kernel(
    x, weight, bias, y, mean_out, rstd_out, row_size, eps,
    CENTER: tl.constexpr, HAS_WEIGHT: tl.constexpr, HAS_BIAS: tl.constexpr,
    SINGLE_PASS: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    """SINGLE_PASS rows fit one block and are read once; longer rows are read three times."""
    row_index = tl.program_id(0)
    row = row_index.to(tl.int64) * row_size
    mean = 0.0
    if SINGLE_PASS:
        cols = tl.arange(0, BLOCK_N)
        mask = cols < row_size
        values = tl.load(x + row + cols, mask=mask, other=0.0).to(tl.float32)
        if CENTER:
            mean = tl.sum(values, axis=0) / row_size
        centered = tl.where(mask, values - mean, 0.0)
        rstd = 1.0 / tl.sqrt(tl.sum(centered * centered, axis=0) / row_size + eps)
        _store_affine(y + row, cols, mask, centered * rstd, weight, bias, HAS_WEIGHT, HAS_BIAS)
    else:
        if CENTER:
            acc = tl.zeros([BLOCK_N], tl.float32)
            for start in range(0, row_size, BLOCK_N):
                cols = start + tl.arange(0, BLOCK_N)
                acc += tl.load(x + row + cols, mask=cols < row_size, other=0.0).to(tl.float32)
            mean = tl.sum(acc, axis=0) / row_size
        squares = tl.zeros([BLOCK_N], tl.float32)
        for start in range(0, row_size, BLOCK_N):
            cols = start + tl.arange(0, BLOCK_N)
            mask = cols < row_size
            values = tl.load(x + row + cols, mask=mask, other=0.0).to(tl.float32)
            centered = tl.where(mask, values - mean, 0.0)
            squares += centered * centered
        rstd = 1.0 / tl.sqrt(tl.sum(squares, axis=0) / row_size + eps)
        for start in range(0, row_size, BLOCK_N):
            cols = start + tl.arange(0, BLOCK_N)
            mask = cols < row_size
            values = tl.load(x + row + cols, mask=mask, other=0.0).to(tl.float32)
            _store_affine(y + row, cols, mask, (values - mean) * rstd, weight, bias,
                          HAS_WEIGHT, HAS_BIAS)  # fmt: skip
    if CENTER:
        store(mean_out + row_index, mean)
    store(rstd_out + row_index, rstd)


@triton.jit
def _scaled_grad(grad_y, weight, cols, mask, HAS_WEIGHT: tl.constexpr):
    grad = tl.load(grad_y + cols, mask=mask, other=0.0).to(tl.float32)
    if HAS_WEIGHT:
        grad = grad * tl.load(weight + cols, mask=mask, other=0.0).to(tl.float32)
    return grad


@triton.jit
def _layer_norm_backward_kernel(
    grad_y, x, weight, mean_in, rstd_in, grad_x, row_size,
    CENTER: tl.constexpr, HAS_WEIGHT: tl.constexpr, SINGLE_PASS: tl.constexpr,
    BLOCK_N: tl.constexpr,
):  # fmt: skip
    """SINGLE_PASS rows fit one block and are read once; longer rows are read twice."""
    row_index = tl.program_id(0)
    row = row_index.to(tl.int64) * row_size
    rstd = tl.load(rstd_in + row_index).to(tl.float32)
    mean = 0.0
    if CENTER:
        mean = tl.load(mean_in + row_index).to(tl.float32)
    if SINGLE_PASS:
        cols = tl.arange(0, BLOCK_N)
        mask = cols < row_size
        grad = _scaled_grad(grad_y + row, weight, cols, mask, HAS_WEIGHT)
        values = tl.load(x + row + cols, mask=mask, other=0.0).to(tl.float32)
        normalized = tl.where(mask, (values - mean) * rstd, 0.0)
        result = grad - normalized * (tl.sum(grad * normalized, axis=0) / row_size)
        if CENTER:
            result = result - tl.sum(grad, axis=0) / row_size
        store(grad_x + row + cols, result * rstd, mask=mask)
    else:
        dot = tl.zeros([BLOCK_N], tl.float32)
        total = tl.zeros([BLOCK_N], tl.float32)
        for start in range(0, row_size, BLOCK_N):
            cols = start + tl.arange(0, BLOCK_N)
            mask = cols < row_size
            grad = _scaled_grad(grad_y + row, weight, cols, mask, HAS_WEIGHT)
            values = tl.load(x + row + cols, mask=mask, other=0.0).to(tl.float32)
            dot += grad * tl.where(mask, (values - mean) * rstd, 0.0)
            total += grad
        dot_mean = tl.sum(dot, axis=0) / row_size
        grad_mean = tl.sum(total, axis=0) / row_size
        for start in range(0, row_size, BLOCK_N):
            cols = start + tl.arange(0, BLOCK_N)
            mask = cols < row_size
            grad = _scaled_grad(grad_y + row, weight, cols, mask, HAS_WEIGHT)
            values = tl.load(x + row + cols, mask=mask, other=0.0).to(tl.float32)
            result = grad - (values - mean) * rstd * dot_mean
            if CENTER:
                result = result - grad_mean
            store(grad_x + row + cols, result * rstd, mask=mask)


@triton.jit
def _layer_norm_parameter_grad_kernel(
    grad_y, x, mean_in, rstd_in, grad_weight, grad_bias, num_rows, row_size,
    CENTER: tl.constexpr, HAS_BIAS: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < row_size
    acc_weight = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    acc_bias = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for start in range(0, num_rows, BLOCK_M):
        rows = start + tl.arange(0, BLOCK_M)
        row_mask = rows < num_rows
        mask = row_mask[:, None] & col_mask[None, :]
        offsets = rows.to(tl.int64)[:, None] * row_size + cols[None, :]
        grad = tl.load(grad_y + offsets, mask=mask, other=0.0).to(tl.float32)
        values = tl.load(x + offsets, mask=mask, other=0.0).to(tl.float32)
        rstd = tl.load(rstd_in + rows, mask=row_mask, other=0.0).to(tl.float32)
        if CENTER:
            mean = tl.load(mean_in + rows, mask=row_mask, other=0.0).to(tl.float32)
            values = values - mean[:, None]
        acc_weight += grad * values * rstd[:, None]
        if HAS_BIAS:
            acc_bias += grad
    store(grad_weight + cols, tl.sum(acc_weight, axis=0), mask=col_mask)
    if HAS_BIAS:
        store(grad_bias + cols, tl.sum(acc_bias, axis=0), mask=col_mask)


@functools.cache
def _row_block(row_size: int) -> tuple[int, int]:
    config = launch_config(current_vendor().name, "row")
    return min(tuning.next_power_of_2(max(row_size, 1)), config.block_size), config.num_warps


class _RowPlan(NamedTuple):
    """What normalising rows of one layout launches, worked out once per layout: it costs
    microseconds of every small call."""

    row_size: int
    num_rows: int
    stats_shape: tuple[int, ...]
    stats_strides: tuple[int, ...]
    """Contiguous strides of ``stats_shape``."""
    block: int
    warps: int


@functools.lru_cache(maxsize=1024)
def _row_plan(numel: int, row_size: int, stats_shape: tuple[int, ...] | None) -> _RowPlan:
    num_rows = numel // row_size if row_size else 0
    shape = (num_rows,) if stats_shape is None else stats_shape
    strides = [1] * len(shape)
    for dim in range(len(shape) - 2, -1, -1):
        strides[dim] = strides[dim + 1] * max(shape[dim + 1], 1)
    return _RowPlan(row_size, num_rows, shape, tuple(strides), *_row_block(row_size))


def stats_dtype(x: torch.Tensor) -> torch.dtype:
    """The dtype ATen gives mean and rstd: the input's on CPU, float32 for halves elsewhere."""
    if x.dtype in (torch.float16, torch.bfloat16) and x.device.type != "cpu":
        return torch.float32
    return x.dtype


def normalize_rows(
    x: torch.Tensor,
    row_size: int,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    eps: float,
    center: bool,
    stats_shape: tuple[int, ...] | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(y, mean, rstd) of ``x`` viewed as rows of ``row_size``; mean/rstd are float32, flat
    unless ``stats_shape`` (with as many elements as rows) is given."""
    x = x.contiguous()
    return _normalize(x, weight, bias, eps, center, _row_plan(x.numel(), row_size, stats_shape))


def _normalize(
    x: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    eps: float,
    center: bool,
    plan: _RowPlan,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """:func:`normalize_rows` of a contiguous ``x`` by its plan."""
    row_size, num_rows, stats_shape, stats_strides, block, warps = plan
    y = torch.empty_like(x)
    mean = torch.empty_strided(stats_shape, stats_strides, dtype=torch.float32, device=x.device)
    rstd = torch.empty_strided(stats_shape, stats_strides, dtype=torch.float32, device=x.device)
    if num_rows:
        _layer_norm_forward_kernel.run(
            x, weight, bias, y, mean, rstd, row_size, eps,
            CENTER=center, HAS_WEIGHT=weight is not None, HAS_BIAS=bias is not None,
            SINGLE_PASS=row_size <= block, BLOCK_N=block, num_warps=warps,
            grid=(num_rows,), warmup=False,
        )  # fmt: skip
    return y, mean, rstd


def normalize_rows_backward(
    grad_y: torch.Tensor,
    x: torch.Tensor,
    row_size: int,
    weight: torch.Tensor | None,
    mean: torch.Tensor | None,
    rstd: torch.Tensor,
    grad_input: bool = True,
    grad_parameters: tuple[bool, bool] = (False, False),
) -> tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor | None]:
    """(grad_x, grad_weight, grad_bias) for :func:`normalize_rows`; ``None`` where not asked."""
    grad_y, x = grad_y.contiguous(), x.contiguous()
    rstd = rstd.contiguous()
    mean = mean.contiguous() if mean is not None else None
    num_rows = x.numel() // row_size if row_size else 0
    center = mean is not None
    grad_x = grad_weight = grad_bias = None
    block, warps = _row_block(row_size)
    if grad_input:
        grad_x = torch.empty_like(x)
        if num_rows:
            _layer_norm_backward_kernel.run(
                grad_y, x, weight, mean, rstd, grad_x, row_size,
                CENTER=center, HAS_WEIGHT=weight is not None, SINGLE_PASS=row_size <= block,
                BLOCK_N=block, num_warps=warps,
                grid=(num_rows,), warmup=False,
            )  # fmt: skip
    want_weight, want_bias = grad_parameters
    if want_weight or want_bias:
        grad_weight = torch.empty(row_size, dtype=torch.float32, device=x.device)
        grad_bias = torch.empty(row_size, dtype=torch.float32, device=x.device)
        block_n = min(32, tuning.next_power_of_2(max(row_size, 1)))
        block_m = min(64, tuning.next_power_of_2(max(num_rows, 1)))
        _layer_norm_parameter_grad_kernel.run(
            grad_y, x, mean, rstd, grad_weight, grad_bias, num_rows, row_size,
            CENTER=center, HAS_BIAS=want_bias, BLOCK_M=block_m, BLOCK_N=block_n,
            num_warps=warps,
            grid=(tuning.cdiv(row_size, block_n),), warmup=False,
        )  # fmt: skip
        grad_weight = grad_weight if want_weight else None
        grad_bias = grad_bias if want_bias else None
    return grad_x, grad_weight, grad_bias


@functools.lru_cache(maxsize=1024)
def _layer_norm_plan(shape: tuple[int, ...], normalized_shape: tuple[int, ...]) -> _RowPlan:
    """The row plan of an input of ``shape``, mean and rstd shaped as ATen shapes them."""
    leading = len(shape) - len(normalized_shape)
    if leading < 0 or shape[leading:] != normalized_shape:
        raise RuntimeError(
            f"normalized_shape: {list(normalized_shape)} does not match the trailing dims of "
            f"input of shape {list(shape)}"
        )
    stats_shape = (*shape[:leading], *([1] * len(normalized_shape)))
    return _row_plan(math.prod(shape), math.prod(normalized_shape), stats_shape)


def layer_norm_forward(
    x: torch.Tensor,
    normalized_shape: Sequence[int],
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    eps: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(y, mean, rstd) with mean and rstd shaped as ATen shapes them."""
    plan = _layer_norm_plan(x.shape, tuple(normalized_shape))
    y, mean, rstd = _normalize(x.contiguous(), weight, bias, eps, True, plan)
    if x.dtype is not torch.float32 and (dtype := stats_dtype(x)) is not torch.float32:
        mean, rstd = mean.to(dtype), rstd.to(dtype)
    return y, mean, rstd


def layer_norm_backward(
    grad_y: torch.Tensor,
    x: torch.Tensor,
    normalized_shape: Sequence[int],
    mean: torch.Tensor,
    rstd: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    output_mask: Sequence[bool],
) -> tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor | None]:
    """(grad_x, grad_weight, grad_bias) as selected by ``output_mask``."""
    row_size = math.prod(normalized_shape)
    wanted = (output_mask[1] and weight is not None, output_mask[2] and bias is not None)
    grad_x, grad_weight, grad_bias = normalize_rows_backward(
        grad_y, x, row_size, weight, mean.reshape(-1).float(), rstd.reshape(-1).float(),
        grad_input=output_mask[0], grad_parameters=wanted,
    )  # fmt: skip
    if grad_weight is not None and weight is not None:
        grad_weight = grad_weight.to(weight.dtype).reshape(weight.shape)
    if grad_bias is not None and bias is not None:
        grad_bias = grad_bias.to(bias.dtype).reshape(bias.shape)
    return grad_x, grad_weight, grad_bias


REGISTRATIONS: Final[tuple[Registration, ...]] = (
    Registration("native_layer_norm", layer_norm_forward, condition=is_floating_input),
    Registration("native_layer_norm_backward", layer_norm_backward, condition=is_floating_input),
)
