"""Scaled dot-product attention, forward only (a flash-attention style kernel).

Each program holds BLOCK_M queries of one (batch, head) and walks the keys in blocks with an
online softmax, so the score matrix never exists in memory. ``aten::scaled_dot_product_attention``
is a composite, so the entry registers at the autograd key; calls that need a gradient, a mask,
dropout or grouped-query heads fall back to ATen through the condition.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import triton  # type: ignore[import-untyped]
import triton.language as tl  # type: ignore[import-untyped]

from gems_kernels.backends import current_vendor

__all__ = ["is_plain_inference", "scaled_dot_product_attention"]


@triton.jit
def _attention_forward_kernel(
    q, k, v, out, query_len, key_len, head_dim, value_dim, scale,
    CAUSAL: tl.constexpr, UPCAST: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_DV: tl.constexpr,
):  # fmt: skip
    head = tl.program_id(1).to(tl.int64)
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, BLOCK_D)
    value_dims = tl.arange(0, BLOCK_DV)
    row_mask = rows < query_len
    q_tile = tl.load(
        q + head * query_len * head_dim + rows[:, None] * head_dim + dims[None, :],
        mask=row_mask[:, None] & (dims < head_dim)[None, :],
        other=0.0,
    )
    if UPCAST:
        q_tile = q_tile.to(tl.float32)
    running_max = tl.full([BLOCK_M], float("-inf"), tl.float32)
    running_sum = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_DV], tl.float32)
    for start in range(0, key_len, BLOCK_N):
        keys = start + tl.arange(0, BLOCK_N)
        key_mask = keys < key_len
        k_tile = tl.load(
            k + head * key_len * head_dim + keys[None, :] * head_dim + dims[:, None],
            mask=key_mask[None, :] & (dims < head_dim)[:, None],
            other=0.0,
        )
        v_tile = tl.load(
            v + head * key_len * value_dim + keys[:, None] * value_dim + value_dims[None, :],
            mask=key_mask[:, None] & (value_dims < value_dim)[None, :],
            other=0.0,
        )
        if UPCAST:
            k_tile, v_tile = k_tile.to(tl.float32), v_tile.to(tl.float32)
        scores = tl.dot(q_tile, k_tile) * scale
        allowed = key_mask[None, :]
        if CAUSAL:
            allowed = allowed & (keys[None, :] <= rows[:, None])
        scores = tl.where(allowed, scores, float("-inf"))
        new_max = tl.maximum(running_max, tl.max(scores, axis=1))
        safe_max = tl.where(new_max == float("-inf"), 0.0, new_max)
        weights = tl.exp(scores - safe_max[:, None])
        rescale = tl.exp(running_max - safe_max)
        running_sum = running_sum * rescale + tl.sum(weights, axis=1)
        acc = acc * rescale[:, None] + tl.dot(weights.to(v_tile.dtype), v_tile)
        running_max = new_max
    result = acc / running_sum[:, None]
    tl.store(
        out + head * query_len * value_dim + rows[:, None] * value_dim + value_dims[None, :],
        result,
        mask=row_mask[:, None] & (value_dims < value_dim)[None, :],
    )


def is_plain_inference(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attn_mask: Any = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    *,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> bool:
    """Condition: no gradient needed, no mask, no dropout, equal heads, half/float dtypes."""
    tensors = (query, key, value)
    return (
        attn_mask is None
        and dropout_p == 0.0
        and not enable_gqa
        and not any(t.requires_grad for t in tensors)
        and len({t.dtype for t in tensors}) == 1
        and query.dtype in (torch.float16, torch.bfloat16, torch.float32)
        and query.dim() >= 2
        and query.shape[:-2] == key.shape[:-2] == value.shape[:-2]
    )


def scaled_dot_product_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attn_mask: Any = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    *,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> torch.Tensor:
    """aten::scaled_dot_product_attention for (..., L, D) inputs without mask or dropout."""
    if attn_mask is not None or dropout_p or enable_gqa:
        raise NotImplementedError("attn_mask, dropout_p and enable_gqa are not implemented")
    *batch, query_len, head_dim = query.shape
    key_len, value_dim = key.shape[-2], value.shape[-1]
    heads = math.prod(batch)
    q = query.reshape(heads, query_len, head_dim).contiguous()
    k = key.reshape(heads, key_len, head_dim).contiguous()
    v = value.reshape(heads, key_len, value_dim).contiguous()
    out = torch.empty(heads, query_len, value_dim, dtype=query.dtype, device=query.device)
    if out.numel():
        interpreted = current_vendor().name == "cpu"
        block_m = 16 if interpreted else 64
        block_n = 16 if interpreted else 64
        _attention_forward_kernel[(triton.cdiv(query_len, block_m), heads)](
            q, k, v, out, query_len, key_len, head_dim, value_dim,
            scale if scale is not None else 1.0 / math.sqrt(head_dim),
            CAUSAL=is_causal, UPCAST=interpreted, BLOCK_M=block_m, BLOCK_N=block_n,
            BLOCK_D=max(16, triton.next_power_of_2(head_dim)),
            BLOCK_DV=max(16, triton.next_power_of_2(value_dim)),
            num_warps=1 if interpreted else 4,
        )  # fmt: skip
    return out.view(*batch, query_len, value_dim)
