"""Embedding lookup and its dense backward (scatter-add of gradient rows)."""

from __future__ import annotations

from typing import Any, Final

import torch
import triton
import triton.language as tl

from gems_kernels.backends import current_vendor, launch_config, tuning
from gems_kernels.ops.registering import Registration
from gems_kernels.pointwise.rounding import store

__all__ = ["REGISTRATIONS", "embedding", "embedding_dense_backward", "is_unscaled_backward"]


@triton.jit
def _embedding_forward_kernel(weight, indices, out, dim, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    index = tl.load(indices + row).to(tl.int64)
    for start in range(0, dim, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = cols < dim
        values = tl.load(weight + index * dim + cols, mask=mask)
        store(out + row * dim + cols, values, mask=mask)


@triton.jit
def _embedding_backward_kernel(grad_out, indices, grad_weight, dim, padding_idx,
                               BLOCK_N: tl.constexpr):  # fmt: skip
    row = tl.program_id(0).to(tl.int64)
    index = tl.load(indices + row).to(tl.int64)
    if index != padding_idx:
        for start in range(0, dim, BLOCK_N):
            cols = start + tl.arange(0, BLOCK_N)
            mask = cols < dim
            grad = tl.load(grad_out + row * dim + cols, mask=mask, other=0.0).to(tl.float32)
            tl.atomic_add(grad_weight + index * dim + cols, grad, mask=mask)


def _block(dim: int) -> tuple[int, int]:
    config = launch_config(current_vendor().name, "row")
    return min(tuning.next_power_of_2(max(dim, 1)), config.block_size), config.num_warps


def embedding(
    weight: torch.Tensor,
    indices: torch.Tensor,
    padding_idx: int = -1,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
) -> torch.Tensor:
    """aten::embedding: rows of ``weight`` selected by ``indices``."""
    if weight.dim() != 2:
        raise RuntimeError(f"weight: expected a 2-D embedding matrix, got {weight.dim()}-D")
    num_weights, dim = weight.shape
    flat = indices.contiguous().view(-1)
    # Checked only where it costs no device synchronisation.
    on_cpu = flat.device.type == "cpu" and flat.numel()
    if on_cpu and (int(flat.min()) < 0 or int(flat.max()) >= num_weights):
        raise IndexError(f"indices: expected values in [0, {num_weights})")
    out = torch.empty(flat.numel(), dim, dtype=weight.dtype, device=weight.device)
    if flat.numel() and dim:
        block, warps = _block(dim)
        _embedding_forward_kernel.run(
            weight.contiguous(),
            flat,
            out,
            dim,
            BLOCK_N=block,
            num_warps=warps,
            grid=(flat.numel(),),
            warmup=False,
        )
    return out.view(*indices.shape, dim)


def is_unscaled_backward(*args: Any, **kwargs: Any) -> bool:
    """Condition: ``scale_grad_by_freq`` is off (that mode stays in ATen)."""
    return not args[4] if len(args) > 4 else not kwargs.get("scale_grad_by_freq", False)


def embedding_dense_backward(
    grad_output: torch.Tensor,
    indices: torch.Tensor,
    num_weights: int,
    padding_idx: int,
    scale_grad_by_freq: bool,
) -> torch.Tensor:
    """aten::embedding_dense_backward: gradient rows summed into the rows they came from."""
    if scale_grad_by_freq:
        raise NotImplementedError("scale_grad_by_freq: not implemented in gems kernels")
    dim = grad_output.shape[-1]
    flat = indices.contiguous().view(-1)
    grads = grad_output.contiguous().view(-1, dim)
    accumulated = torch.zeros(num_weights, dim, dtype=torch.float32, device=grad_output.device)
    if flat.numel() and dim:
        block, warps = _block(dim)
        _embedding_backward_kernel.run(
            grads,
            flat,
            accumulated,
            dim,
            padding_idx,
            BLOCK_N=block,
            num_warps=warps,
            grid=(flat.numel(),),
            warmup=False,
        )
    return accumulated.to(grad_output.dtype)


REGISTRATIONS: Final[tuple[Registration, ...]] = (
    Registration("embedding", embedding),
    Registration(
        "embedding_dense_backward", embedding_dense_backward, condition=is_unscaled_backward
    ),
)
