"""Softmax and log-softmax along one dim, forward and backward.

Each program owns one row (the softmax dim moved last). The forward makes one pass for the running
maximum and normaliser (online softmax) and one to write; rows of any length are walked in blocks.
"""

from __future__ import annotations

import functools
from typing import Final

import torch
import triton
import triton.language as tl

from gems_kernels.backends import current_vendor, launch_config, tuning
from gems_kernels.ops.reductions import is_floating_input
from gems_kernels.ops.registering import Registration
from gems_kernels.ops.row_layout import normalize_dims
from gems_kernels.pointwise.rounding import store

__all__ = [
    "REGISTRATIONS",
    "log_softmax",
    "log_softmax_backward",
    "row_max_and_sum_exp",
    "softmax",
    "softmax_backward",
]


@triton.jit
def row_max_and_sum_exp(row, row_size, BLOCK_N: tl.constexpr):
    """(max, sum of exp(x - max)) of one row of any length, in one pass (online softmax)."""
    running_max = tl.full([BLOCK_N], float("-inf"), tl.float32)
    running_sum = tl.zeros([BLOCK_N], tl.float32)
    for start in range(0, row_size, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        values = tl.load(row + cols, mask=cols < row_size, other=float("-inf")).to(tl.float32)
        new_max = tl.maximum(running_max, values)
        # Where every value so far is -inf (masked lanes included), shift by 0 instead: exp of
        # -inf - 0 is 0, and no -inf - -inf (NaN, and a NumPy warning in the interpreter).
        shift = tl.where(new_max != float("-inf"), new_max, 0.0)
        running_sum = running_sum * tl.exp(running_max - shift) + tl.exp(values - shift)
        running_max = new_max
    row_max = tl.max(running_max, axis=0)
    row_shift = tl.where(row_max != float("-inf"), row_max, 0.0)
    return row_max, tl.sum(running_sum * tl.exp(running_max - row_shift), axis=0)


@triton.jit
def _softmax_forward_kernel(x, y, row_size, LOG: tl.constexpr, SINGLE_PASS: tl.constexpr,
                            BLOCK_N: tl.constexpr):  # fmt: skip
    """SINGLE_PASS rows fit one block and are read once; longer rows are read twice."""
    row = tl.program_id(0).to(tl.int64) * row_size
    if SINGLE_PASS:
        cols = tl.arange(0, BLOCK_N)
        mask = cols < row_size
        values = tl.load(x + row + cols, mask=mask, other=float("-inf")).to(tl.float32)
        row_max = tl.max(values, axis=0)
        shifted = values - tl.where(row_max == float("-inf"), 0.0, row_max)
        exponentials = tl.exp(shifted)
        total = tl.sum(exponentials, axis=0)
        if LOG:  # noqa: SIM108  (constexpr branch)
            result = shifted - tl.log(total)
        else:
            result = exponentials / total
        store(y + row + cols, result, mask=mask)
    else:
        row_max, total = row_max_and_sum_exp(x + row, row_size, BLOCK_N)
        for start in range(0, row_size, BLOCK_N):
            cols = start + tl.arange(0, BLOCK_N)
            mask = cols < row_size
            values = tl.load(x + row + cols, mask=mask, other=0.0).to(tl.float32)
            if LOG:  # noqa: SIM108  (constexpr branch)
                result = values - row_max - tl.log(total)
            else:
                result = tl.exp(values - row_max) / total
            store(y + row + cols, result, mask=mask)


@triton.jit
def _softmax_backward_kernel(grad_y, y, grad_x, row_size, LOG: tl.constexpr,
                             SINGLE_PASS: tl.constexpr, BLOCK_N: tl.constexpr):  # fmt: skip
    """SINGLE_PASS rows fit one block and are read once; longer rows are read twice."""
    row = tl.program_id(0).to(tl.int64) * row_size
    if SINGLE_PASS:
        cols = tl.arange(0, BLOCK_N)
        mask = cols < row_size
        grad = tl.load(grad_y + row + cols, mask=mask, other=0.0).to(tl.float32)
        out = tl.load(y + row + cols, mask=mask, other=0.0).to(tl.float32)
        if LOG:
            result = grad - tl.exp(out) * tl.sum(grad, axis=0)
        else:
            result = out * (grad - tl.sum(grad * out, axis=0))
        store(grad_x + row + cols, result, mask=mask)
    else:
        acc = tl.zeros([BLOCK_N], tl.float32)
        for start in range(0, row_size, BLOCK_N):
            cols = start + tl.arange(0, BLOCK_N)
            mask = cols < row_size
            grad = tl.load(grad_y + row + cols, mask=mask, other=0.0).to(tl.float32)
            if LOG:
                acc += grad
            else:
                acc += grad * tl.load(y + row + cols, mask=mask, other=0.0).to(tl.float32)
        total = tl.sum(acc, axis=0)
        for start in range(0, row_size, BLOCK_N):
            cols = start + tl.arange(0, BLOCK_N)
            mask = cols < row_size
            grad = tl.load(grad_y + row + cols, mask=mask, other=0.0).to(tl.float32)
            out = tl.load(y + row + cols, mask=mask, other=0.0).to(tl.float32)
            if LOG:  # noqa: SIM108  (constexpr branch)
                result = grad - tl.exp(out) * total
            else:
                result = out * (grad - total)
            store(grad_x + row + cols, result, mask=mask)


def _rows(x: torch.Tensor, dim: int) -> tuple[torch.Tensor, int, int]:
    """``x`` with ``dim`` moved last and made contiguous, the moved dim and the row size."""
    if x.dim() == 0:
        return x.reshape(1).contiguous(), 0, 1
    ndim = x.dim()
    axis = dim + ndim if -ndim <= dim < 0 else dim
    if not 0 <= axis < ndim:
        (axis,) = normalize_dims(dim, ndim)  # raises ATen's IndexError
    if axis == ndim - 1:
        return x.contiguous(), axis, x.shape[axis]
    return x.movedim(axis, -1).contiguous(), axis, x.shape[axis]


def _moved_back(result: torch.Tensor, like: torch.Tensor, axis: int) -> torch.Tensor:
    """``result`` (rows last) in ``like``'s dim order."""
    if like.dim() == 0:
        return result.reshape(like.shape)
    return result if axis == like.dim() - 1 else result.movedim(-1, axis)


@functools.cache
def _block(row_size: int) -> tuple[int, int]:
    config = launch_config(current_vendor().name, "row")
    return min(tuning.next_power_of_2(max(row_size, 1)), config.block_size), config.num_warps


def _forward(x: torch.Tensor, dim: int, half_to_float: bool, log: bool) -> torch.Tensor:
    rows, axis, row_size = _rows(x, dim)
    dtype = torch.float32 if half_to_float else x.dtype
    out = torch.empty(rows.shape, dtype=dtype, device=x.device)
    if rows.numel():
        block, warps = _block(row_size)
        _softmax_forward_kernel.run(
            rows,
            out,
            row_size,
            LOG=log,
            SINGLE_PASS=row_size <= block,
            BLOCK_N=block,
            num_warps=warps,
            grid=(rows.numel() // row_size,),
            warmup=False,
        )
    return _moved_back(out, x, axis)


def _backward(
    grad: torch.Tensor, output: torch.Tensor, dim: int, input_dtype: torch.dtype, log: bool
) -> torch.Tensor:
    grad_rows, axis, row_size = _rows(grad, dim)
    out_rows, _, _ = _rows(output, dim)
    result = torch.empty(grad_rows.shape, dtype=input_dtype, device=grad.device)
    if grad_rows.numel():
        block, warps = _block(row_size)
        _softmax_backward_kernel.run(
            grad_rows,
            out_rows,
            result,
            row_size,
            LOG=log,
            SINGLE_PASS=row_size <= block,
            BLOCK_N=block,
            num_warps=warps,
            grid=(grad_rows.numel() // row_size,),
            warmup=False,
        )
    return _moved_back(result, grad, axis)


def softmax(x: torch.Tensor, dim: int, half_to_float: bool = False) -> torch.Tensor:
    """aten::_softmax."""
    return _forward(x, dim, half_to_float, log=False)


def log_softmax(x: torch.Tensor, dim: int, half_to_float: bool = False) -> torch.Tensor:
    """aten::_log_softmax."""
    return _forward(x, dim, half_to_float, log=True)


def softmax_backward(
    grad_output: torch.Tensor, output: torch.Tensor, dim: int, input_dtype: torch.dtype
) -> torch.Tensor:
    """aten::_softmax_backward_data."""
    return _backward(grad_output, output, dim, input_dtype, log=False)


def log_softmax_backward(
    grad_output: torch.Tensor, output: torch.Tensor, dim: int, input_dtype: torch.dtype
) -> torch.Tensor:
    """aten::_log_softmax_backward_data."""
    return _backward(grad_output, output, dim, input_dtype, log=True)


REGISTRATIONS: Final[tuple[Registration, ...]] = (
    Registration("_softmax", softmax, condition=is_floating_input),
    Registration("_log_softmax", log_softmax, condition=is_floating_input),
    Registration("_softmax_backward_data", softmax_backward, condition=is_floating_input),
    Registration("_log_softmax_backward_data", log_softmax_backward, condition=is_floating_input),
)
