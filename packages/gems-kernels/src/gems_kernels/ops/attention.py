"""Scaled dot-product attention, forward and backward (flash-attention 2 style kernels).

Inputs are viewed as (batch, heads, length, dim) with their own strides, so layouts such as
(B, L, H, D) transposed to (B, H, L, D) are read in place. The forward kernel holds BLOCK_M
queries of one head and walks the keys in blocks with an online softmax, so the score matrix
never exists in memory; it returns each row's logsumexp (for ATen's entry points; the gems
backward does not read it). The backward recomputes the scores: a statistics pass of the dQ
kernel over the keys forms each row's score maximum m, the inverse of its sum l of exp(s - m),
and delta = rowsum(P * dP); one kernel accumulates dK and dV for a block of keys over every query
block (and every query head of its group, so grouped-query gradients are summed without
atomics), another accumulates dQ for a block of queries, both with P = exp(s - m) / l.
Keeping m and l apart instead of reading P = exp(s - lse) from a float32 lse, and forming delta
from the same dP values the kernels subtract it from instead of rowsum(dO * O) from the rounded
output, keeps float32 gradients within ATen's math path's error where rows are nearly one-hot
(scores far from zero; see the package README, "Re-checked").

Masks: a boolean ``attn_mask`` (True takes part) or an additive one (float32 or the query's
dtype), broadcastable to (..., L, S); ``is_causal`` keeps key j for query i when j <= i (top-left
alignment, as ATen's reference does when L != S). A row with no key left gives zeros, and zero
gradients, as ATen does. ``aten::scaled_dot_product_attention`` is a composite, so the entry
registers at the autograd key and records :class:`ScaledDotProductAttention`. An additive mask
that requires grad gets dS, summed over its broadcast dims (through a float32 buffer of the
scores' size, as ATen's reference needs too). Dropout, a mask together with ``is_causal``,
broadcast batch dims and head dims over 256 fall back to ATen through
:func:`is_supported_attention`.
"""

from __future__ import annotations

import math
from typing import Any, Final, NamedTuple

import torch
import triton
import triton.language as tl
from torch.autograd.function import once_differentiable

from gems_kernels import autograd, host
from gems_kernels.backends import current_vendor, tuning
from gems_kernels.ops import copies, reductions
from gems_kernels.ops.matmul import dot_precision
from gems_kernels.ops.registering import Registration
from gems_kernels.pointwise.rounding import store

__all__ = [
    "REGISTRATIONS",
    "ScaledDotProductAttention",
    "attention_backward",
    "attention_forward",
    "is_supported_attention",
    "scaled_dot_product_attention",
]

_NO_MASK: Final = 0
_BOOL_MASK: Final = 1
_ADDITIVE_MASK: Final = 2
_MAX_HEAD_DIM: Final = 256
_DTYPES: Final = (torch.float16, torch.bfloat16, torch.float32)


@triton.jit
def _load_tile(base, rows, cols, row_stride, col_stride, row_count, col_count,
               UPCAST: tl.constexpr):  # fmt: skip
    tile = tl.load(
        base + rows[:, None] * row_stride + cols[None, :] * col_stride,
        mask=(rows < row_count)[:, None] & (cols < col_count)[None, :],
        other=0.0,
    )
    if UPCAST:
        tile = tile.to(tl.float32)
    return tile


@triton.jit
def _store_tile(base, tile, rows, cols, row_stride, col_stride, row_count, col_count):
    store(
        base + rows[:, None] * row_stride + cols[None, :] * col_stride,
        tile,
        mask=(rows < row_count)[:, None] & (cols < col_count)[None, :],
    )


@triton.jit
def _masked_scores(
    q_tile, k_tile_t, rows, keys, query_len, key_len, scale, mask, mask_row_stride,
    mask_key_stride,
    CAUSAL: tl.constexpr, MASK: tl.constexpr, PRECISION: tl.constexpr,
):  # fmt: skip
    """scale * q @ k^T plus the mask, with -inf where a key does not take part."""
    scores = tl.dot(q_tile, k_tile_t, input_precision=PRECISION) * scale
    allowed = (rows < query_len)[:, None] & (keys < key_len)[None, :]
    if CAUSAL:
        allowed = allowed & (keys[None, :] <= rows[:, None])
    if MASK != 0:
        values = tl.load(
            mask + rows[:, None].to(tl.int64) * mask_row_stride + keys[None, :] * mask_key_stride,
            mask=allowed,
            other=0,
        )
        if MASK == 1:
            allowed = allowed & (values != 0)
        else:
            scores = scores + values.to(tl.float32)
    return tl.where(allowed, scores, float("-inf"))


@triton.jit
def _online_softmax_step(running_max, running_sum, scores):
    """One block of keys of an online softmax: (new row max, the block's weights
    exp(score - max), the factor rescaling earlier sums, the updated sum of weights)."""
    new_max = tl.maximum(running_max, tl.max(scores, axis=1))
    safe_max = tl.where(new_max == float("-inf"), 0.0, new_max)
    weights = tl.exp(scores - safe_max[:, None])
    rescale = tl.exp(running_max - safe_max)
    return new_max, weights, rescale, running_sum * rescale + tl.sum(weights, axis=1)


@triton.jit
def _attention_forward_kernel(
    q, k, v, mask, out, lse,
    heads, group, query_len, key_len, head_dim, value_dim, scale,
    q_batch_stride, q_head_stride, q_row_stride, q_dim_stride,
    k_batch_stride, k_head_stride, k_row_stride, k_dim_stride,
    v_batch_stride, v_head_stride, v_row_stride, v_dim_stride,
    mask_batch_stride, mask_head_stride, mask_row_stride, mask_key_stride,
    out_batch_stride, out_head_stride, out_row_stride, out_dim_stride,
    CAUSAL: tl.constexpr, MASK: tl.constexpr, PRECISION: tl.constexpr, UPCAST: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_DV: tl.constexpr,
):  # fmt: skip
    program = tl.program_id(0).to(tl.int64)
    batch, head = program // heads, program % heads
    kv_head = head // group
    row_start = tl.program_id(1) * BLOCK_M
    rows = row_start + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, BLOCK_D)
    value_dims = tl.arange(0, BLOCK_DV)
    q_tile = _load_tile(q + batch * q_batch_stride + head * q_head_stride, rows, dims,
                        q_row_stride, q_dim_stride, query_len, head_dim, UPCAST)  # fmt: skip
    k_base = k + batch * k_batch_stride + kv_head * k_head_stride
    v_base = v + batch * v_batch_stride + kv_head * v_head_stride
    mask_base = mask + batch * mask_batch_stride + head * mask_head_stride
    running_max = tl.full([BLOCK_M], float("-inf"), tl.float32)
    running_sum = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_DV], tl.float32)
    key_end = key_len
    if CAUSAL:  # the last query of the block sees keys up to its own index
        key_end = tl.minimum(key_len, row_start + BLOCK_M)
    for start in range(0, key_end, BLOCK_N):
        keys = start + tl.arange(0, BLOCK_N)
        k_tile_t = _load_tile(k_base, dims, keys, k_dim_stride, k_row_stride,
                              head_dim, key_len, UPCAST)  # fmt: skip
        v_tile = _load_tile(v_base, keys, value_dims, v_row_stride, v_dim_stride,
                            key_len, value_dim, UPCAST)  # fmt: skip
        scores = _masked_scores(q_tile, k_tile_t, rows, keys, query_len, key_len, scale,
                                mask_base, mask_row_stride, mask_key_stride,
                                CAUSAL, MASK, PRECISION)  # fmt: skip
        running_max, weights, rescale, running_sum = _online_softmax_step(
            running_max, running_sum, scores
        )
        acc = acc * rescale[:, None] + tl.dot(
            weights.to(v_tile.dtype), v_tile, input_precision=PRECISION
        )
    # A row with no key left (fully masked) gives zeros and an infinite logsumexp.
    seen = running_sum > 0
    total = tl.where(seen, running_sum, 1.0)
    _store_tile(out + batch * out_batch_stride + head * out_head_stride, acc / total[:, None],
                rows, value_dims, out_row_stride, out_dim_stride, query_len, value_dim)  # fmt: skip
    store(
        lse + program * query_len + rows,
        tl.where(seen, running_max + tl.log(total), float("inf")),
        mask=rows < query_len,
    )


@triton.jit
def _attention_backward_kv_kernel(
    q, k, v, mask, grad_out, row_max, row_inv_sum, delta, grad_k, grad_v,
    heads, kv_heads, group, query_len, key_len, head_dim, value_dim, scale,
    q_batch_stride, q_head_stride, q_row_stride, q_dim_stride,
    k_batch_stride, k_head_stride, k_row_stride, k_dim_stride,
    v_batch_stride, v_head_stride, v_row_stride, v_dim_stride,
    mask_batch_stride, mask_head_stride, mask_row_stride, mask_key_stride,
    grad_batch_stride, grad_head_stride, grad_row_stride, grad_dim_stride,
    dk_batch_stride, dk_head_stride, dk_row_stride, dk_dim_stride,
    dv_batch_stride, dv_head_stride, dv_row_stride, dv_dim_stride,
    CAUSAL: tl.constexpr, MASK: tl.constexpr, PRECISION: tl.constexpr, UPCAST: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_DV: tl.constexpr,
):  # fmt: skip
    """dK and dV of BLOCK_N keys of one key/value head, over its group of query heads."""
    program = tl.program_id(0).to(tl.int64)
    batch, kv_head = program // kv_heads, program % kv_heads
    key_start = tl.program_id(1) * BLOCK_N
    keys = key_start + tl.arange(0, BLOCK_N)
    dims = tl.arange(0, BLOCK_D)
    value_dims = tl.arange(0, BLOCK_DV)
    k_tile = _load_tile(k + batch * k_batch_stride + kv_head * k_head_stride, keys, dims,
                        k_row_stride, k_dim_stride, key_len, head_dim, UPCAST)  # fmt: skip
    v_tile = _load_tile(v + batch * v_batch_stride + kv_head * v_head_stride, keys, value_dims,
                        v_row_stride, v_dim_stride, key_len, value_dim, UPCAST)  # fmt: skip
    k_tile_t = tl.trans(k_tile)
    v_tile_t = tl.trans(v_tile)
    grad_k_acc = tl.zeros([BLOCK_N, BLOCK_D], tl.float32)
    grad_v_acc = tl.zeros([BLOCK_N, BLOCK_DV], tl.float32)
    # With causal masking only queries at or after the first key of the block see it.
    first_row = 0
    if CAUSAL:
        first_row = (key_start // BLOCK_M) * BLOCK_M
    for member in range(0, group):
        head = kv_head * group + member
        q_base = q + batch * q_batch_stride + head * q_head_stride
        grad_base = grad_out + batch * grad_batch_stride + head * grad_head_stride
        mask_base = mask + batch * mask_batch_stride + head * mask_head_stride
        row_base = (batch * heads + head) * query_len
        for row_start in range(first_row, query_len, BLOCK_M):
            rows = row_start + tl.arange(0, BLOCK_M)
            q_tile = _load_tile(q_base, rows, dims, q_row_stride, q_dim_stride,
                                query_len, head_dim, UPCAST)  # fmt: skip
            do_tile = _load_tile(grad_base, rows, value_dims, grad_row_stride, grad_dim_stride,
                                 query_len, value_dim, UPCAST)  # fmt: skip
            in_range = rows < query_len
            max_tile = tl.load(row_max + row_base + rows, mask=in_range, other=0.0)
            inv_sum_tile = tl.load(row_inv_sum + row_base + rows, mask=in_range, other=0.0)
            row_delta = tl.load(delta + row_base + rows, mask=in_range, other=0.0)
            scores = _masked_scores(q_tile, k_tile_t, rows, keys, query_len, key_len, scale,
                                    mask_base, mask_row_stride, mask_key_stride,
                                    CAUSAL, MASK, PRECISION)  # fmt: skip
            probs = tl.exp(scores - max_tile[:, None]) * inv_sum_tile[:, None]
            grad_v_acc += tl.dot(tl.trans(probs).to(do_tile.dtype), do_tile,
                                 input_precision=PRECISION)  # fmt: skip
            grad_probs = tl.dot(do_tile, v_tile_t, input_precision=PRECISION)
            grad_scores = probs * (grad_probs - row_delta[:, None])
            grad_k_acc += tl.dot(tl.trans(grad_scores).to(q_tile.dtype), q_tile,
                                 input_precision=PRECISION)  # fmt: skip
    _store_tile(grad_k + batch * dk_batch_stride + kv_head * dk_head_stride, grad_k_acc * scale,
                keys, dims, dk_row_stride, dk_dim_stride, key_len, head_dim)  # fmt: skip
    _store_tile(grad_v + batch * dv_batch_stride + kv_head * dv_head_stride, grad_v_acc,
                keys, value_dims, dv_row_stride, dv_dim_stride, key_len, value_dim)  # fmt: skip


@triton.jit
def _attention_backward_q_kernel(
    q, k, v, mask, grad_out, row_max, row_inv_sum, delta, grad_q, grad_mask,
    heads, group, query_len, key_len, head_dim, value_dim, scale,
    q_batch_stride, q_head_stride, q_row_stride, q_dim_stride,
    k_batch_stride, k_head_stride, k_row_stride, k_dim_stride,
    v_batch_stride, v_head_stride, v_row_stride, v_dim_stride,
    mask_batch_stride, mask_head_stride, mask_row_stride, mask_key_stride,
    grad_batch_stride, grad_head_stride, grad_row_stride, grad_dim_stride,
    dq_batch_stride, dq_head_stride, dq_row_stride, dq_dim_stride,
    CAUSAL: tl.constexpr, MASK: tl.constexpr, PRECISION: tl.constexpr, UPCAST: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_DV: tl.constexpr,
    STATS: tl.constexpr, GRAD_MASK: tl.constexpr,
):  # fmt: skip
    """One pass over the keys BLOCK_M queries of one head see. With STATS, the row statistics
    the other passes read: the score maximum m (0 for a row with no key left), 1 / l with l the
    sum of exp(s - m) (0 for such a row) and delta = rowsum(P * dP), dP = dO V^T. Without, dQ
    from them; with GRAD_MASK also the score gradients, the additive mask's gradient before its
    broadcast dims are summed, into a contiguous float32 (B, H, L, S) buffer."""
    program = tl.program_id(0).to(tl.int64)
    batch, head = program // heads, program % heads
    kv_head = head // group
    row_start = tl.program_id(1) * BLOCK_M
    rows = row_start + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, BLOCK_D)
    value_dims = tl.arange(0, BLOCK_DV)
    q_tile = _load_tile(q + batch * q_batch_stride + head * q_head_stride, rows, dims,
                        q_row_stride, q_dim_stride, query_len, head_dim, UPCAST)  # fmt: skip
    do_tile = _load_tile(grad_out + batch * grad_batch_stride + head * grad_head_stride, rows,
                         value_dims, grad_row_stride, grad_dim_stride, query_len, value_dim,
                         UPCAST)  # fmt: skip
    in_range = rows < query_len
    row_offsets = program * query_len + rows
    if STATS:
        running_max = tl.full([BLOCK_M], float("-inf"), tl.float32)
        running_sum = tl.zeros([BLOCK_M], tl.float32)
        running_dot = tl.zeros([BLOCK_M], tl.float32)
    else:
        max_tile = tl.load(row_max + row_offsets, mask=in_range, other=0.0)
        inv_sum_tile = tl.load(row_inv_sum + row_offsets, mask=in_range, other=0.0)
        row_delta = tl.load(delta + row_offsets, mask=in_range, other=0.0)
        grad_q_acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    k_base = k + batch * k_batch_stride + kv_head * k_head_stride
    v_base = v + batch * v_batch_stride + kv_head * v_head_stride
    mask_base = mask + batch * mask_batch_stride + head * mask_head_stride
    key_end = key_len
    if CAUSAL:  # the last query of the block sees keys up to its own index
        key_end = tl.minimum(key_len, row_start + BLOCK_M)
    for start in range(0, key_end, BLOCK_N):
        keys = start + tl.arange(0, BLOCK_N)
        k_tile = _load_tile(k_base, keys, dims, k_row_stride, k_dim_stride,
                            key_len, head_dim, UPCAST)  # fmt: skip
        v_tile_t = _load_tile(v_base, value_dims, keys, v_dim_stride, v_row_stride,
                              value_dim, key_len, UPCAST)  # fmt: skip
        scores = _masked_scores(q_tile, tl.trans(k_tile), rows, keys, query_len, key_len,
                                scale, mask_base, mask_row_stride, mask_key_stride,
                                CAUSAL, MASK, PRECISION)  # fmt: skip
        grad_probs = tl.dot(do_tile, v_tile_t, input_precision=PRECISION)
        if STATS:
            running_max, weights, rescale, running_sum = _online_softmax_step(
                running_max, running_sum, scores
            )
            running_dot = running_dot * rescale + tl.sum(weights * grad_probs, axis=1)
        else:
            probs = tl.exp(scores - max_tile[:, None]) * inv_sum_tile[:, None]
            grad_scores = probs * (grad_probs - row_delta[:, None])
            if GRAD_MASK:
                store(
                    grad_mask + row_offsets[:, None] * key_len + keys[None, :],
                    grad_scores,
                    mask=in_range[:, None] & (keys < key_len)[None, :],
                )
            grad_q_acc += tl.dot(grad_scores.to(k_tile.dtype), k_tile,
                                 input_precision=PRECISION)  # fmt: skip
    if STATS:
        seen = running_sum > 0
        inv_sum = tl.where(seen, 1.0 / tl.where(seen, running_sum, 1.0), 0.0)
        store(row_max + row_offsets, tl.where(seen, running_max, 0.0), mask=in_range)
        store(row_inv_sum + row_offsets, inv_sum, mask=in_range)
        store(delta + row_offsets, running_dot * inv_sum, mask=in_range)
    else:
        _store_tile(grad_q + batch * dq_batch_stride + head * dq_head_stride,
                    grad_q_acc * scale, rows, dims, dq_row_stride, dq_dim_stride, query_len,
                    head_dim)  # fmt: skip


class _Launch(NamedTuple):
    """What every attention kernel launch shares."""

    batch: int
    heads: int
    kv_heads: int
    query_len: int
    key_len: int
    head_dim: int
    value_dim: int
    scale: float
    mask: torch.Tensor | None
    mask_strides: tuple[int, ...]
    blocks: _Blocks
    constants: dict[str, Any]


def _as_4d(tensor: torch.Tensor) -> torch.Tensor:
    """(..., heads, n, d) viewed (or copied, when no view exists) as (batch, heads, n, d)."""
    *lead, length, dim = tensor.shape
    heads = lead[-1] if lead else 1
    return tensor.reshape(math.prod(lead[:-1]), heads, length, dim)


def _mask_kind(mask: torch.Tensor | None) -> int:
    if mask is None:
        return _NO_MASK
    return _BOOL_MASK if mask.dtype == torch.bool else _ADDITIVE_MASK


class _Blocks(NamedTuple):
    """(BLOCK_M, BLOCK_N) of each kernel, and warps per program."""

    forward: tuple[int, int]
    grad_kv: tuple[int, int]
    grad_q: tuple[int, int]
    num_warps: int


def _blocks(interpreted: bool, head_dim: int) -> _Blocks:
    """Block sizes: few, large blocks for the interpreter (it runs a block as one numpy step);
    on GPUs 64x64 forward blocks and backward blocks of 32 along the dimension a kernel loops
    over, halved for head dims over 128 to stay within registers. Not tuned on a GPU."""
    if interpreted:
        return _Blocks((32, 32), (32, 32), (32, 32), 1)
    if head_dim <= 128:
        return _Blocks((64, 64), (32, 64), (64, 32), 4)
    return _Blocks((32, 32), (16, 32), (32, 16), 4)


def _prepare(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attn_mask: torch.Tensor | None,
    is_causal: bool,
    scale: float | None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, _Launch]:
    q, k, v = _as_4d(query), _as_4d(key), _as_4d(value)
    batch, heads, query_len, head_dim = q.shape
    kv_heads, key_len, value_dim = k.shape[1], k.shape[2], v.shape[3]
    mask = None
    mask_strides: tuple[int, ...] = (0, 0, 0, 0)
    if attn_mask is not None:
        mask = attn_mask.expand(*query.shape[:-2], query_len, key_len)
        mask = mask.reshape(batch, heads, query_len, key_len)
        mask_strides = mask.stride()
        if mask.dtype == torch.bool:
            mask = mask.view(torch.uint8)
    interpreted = current_vendor().name == "cpu"
    blocks = _blocks(interpreted, max(head_dim, value_dim))
    constants = {
        "CAUSAL": is_causal,
        "MASK": _mask_kind(attn_mask),
        "PRECISION": dot_precision(query.dtype),
        # Triton's interpreter multiplies bfloat16 tiles wrongly; it gets float32 tiles.
        "UPCAST": interpreted,
        "BLOCK_D": max(16, tuning.next_power_of_2(head_dim)),
        "BLOCK_DV": max(16, tuning.next_power_of_2(value_dim)),
        "num_warps": blocks.num_warps,
    }
    launch = _Launch(
        batch, heads, kv_heads, query_len, key_len, head_dim, value_dim,
        scale if scale is not None else 1.0 / math.sqrt(head_dim),
        mask, mask_strides, blocks, constants,
    )  # fmt: skip
    return q, k, v, launch


def _is_empty(launch: _Launch) -> bool:
    """Whether no kernel needs to run: no query rows, no keys or no value dims."""
    return launch.batch * launch.heads * launch.query_len * launch.key_len * launch.value_dim == 0


def attention_forward(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attn_mask: torch.Tensor | None = None,
    is_causal: bool = False,
    scale: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(out, lse): attention of (..., H, L, D) queries over (..., H_kv, S, D) keys and
    (..., H_kv, S, Dv) values, H a multiple of H_kv; lse is the float32 (B, H, L) logsumexp
    of each row's scaled, masked scores (+inf for a row with no key left; left unwritten when
    there is nothing to compute, see :func:`_is_empty`)."""
    q, k, v, launch = _prepare(query, key, value, attn_mask, is_causal, scale)
    shape = (launch.batch, launch.heads, launch.query_len, launch.value_dim)
    out = torch.empty_like(q) if launch.value_dim == launch.head_dim else q.new_empty(shape)
    lse = torch.empty(shape[:3], dtype=torch.float32, device=query.device)
    if _is_empty(launch):
        out.zero_()
    else:
        block_m, block_n = launch.blocks.forward
        grid = (launch.batch * launch.heads, tuning.cdiv(launch.query_len, block_m))
        _attention_forward_kernel.run(
            q, k, v, launch.mask if launch.mask is not None else q, out, lse,
            launch.heads, launch.heads // launch.kv_heads, launch.query_len, launch.key_len,
            launch.head_dim, launch.value_dim, launch.scale,
            *q.stride(), *k.stride(), *v.stride(), *launch.mask_strides, *out.stride(),
            BLOCK_M=block_m, BLOCK_N=block_n, **launch.constants,
            grid=grid, warmup=False,
        )  # fmt: skip
    return out.reshape(*query.shape[:-1], launch.value_dim), lse


def attention_backward(
    grad_out: torch.Tensor,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attn_mask: torch.Tensor | None = None,
    is_causal: bool = False,
    scale: float | None = None,
    needs: tuple[bool, ...] = (True, True, True, False),
) -> tuple[torch.Tensor | None, ...]:
    """(grad_query, grad_key, grad_value, grad_attn_mask) for :func:`attention_forward`'s
    inputs (it recomputes what it needs, reading neither the forward's output nor its
    logsumexp); a gradient not asked for in ``needs`` is None (the mask's gradient applies to
    an additive mask only, and takes a float32 buffer of the scores' size)."""
    q, k, v, launch = _prepare(query, key, value, attn_mask, is_causal, scale)
    needs_mask = len(needs) > 3 and needs[3] and attn_mask is not None
    allocate = torch.zeros_like if _is_empty(launch) else torch.empty_like
    grad_q = allocate(q) if needs[0] or needs_mask else None
    grad_k = allocate(k) if needs[1] or needs[2] else None
    grad_v = allocate(v) if needs[1] or needs[2] else None
    score_shape = (launch.batch, launch.heads, launch.query_len, launch.key_len)
    grad_scores = (
        copies.zero_(q.new_empty(score_shape, dtype=torch.float32)) if needs_mask else None
    )
    if not _is_empty(launch):
        do = _as_4d(grad_out)
        constants = launch.constants
        row_max, row_inv_sum, delta = (
            torch.empty(launch.batch, launch.heads, launch.query_len, dtype=torch.float32,
                        device=q.device)
            for _ in range(3)
        )  # fmt: skip
        mask = launch.mask if launch.mask is not None else q
        shared = (
            launch.query_len, launch.key_len, launch.head_dim, launch.value_dim, launch.scale,
            *q.stride(), *k.stride(), *v.stride(), *launch.mask_strides, *do.stride(),
        )  # fmt: skip
        group = launch.heads // launch.kv_heads
        q_block_m, q_block_n = launch.blocks.grad_q
        rows_grid = (launch.batch * launch.heads, tuning.cdiv(launch.query_len, q_block_m))
        stats = (row_max, row_inv_sum, delta)
        scores_out = grad_scores if grad_scores is not None else q
        # The statistics pass of the dQ kernel (it writes no dQ: q stands in for it).
        _attention_backward_q_kernel.run(
            q, k, v, mask, do, *stats, q, scores_out, launch.heads, group, *shared, *q.stride(),
            BLOCK_M=q_block_m, BLOCK_N=q_block_n, STATS=True, GRAD_MASK=False, **constants,
            grid=rows_grid, warmup=False,
        )  # fmt: skip
        if grad_k is not None and grad_v is not None:
            kv_block_m, kv_block_n = launch.blocks.grad_kv
            keys_grid = (launch.batch * launch.kv_heads, tuning.cdiv(launch.key_len, kv_block_n))
            _attention_backward_kv_kernel.run(
                q, k, v, mask, do, *stats, grad_k, grad_v,
                launch.heads, launch.kv_heads, group, *shared,
                *grad_k.stride(), *grad_v.stride(),
                BLOCK_M=kv_block_m, BLOCK_N=kv_block_n, **constants,
                grid=keys_grid, warmup=False,
            )  # fmt: skip
        if grad_q is not None:
            _attention_backward_q_kernel.run(
                q, k, v, mask, do, *stats, grad_q, scores_out,
                launch.heads, group, *shared, *grad_q.stride(),
                BLOCK_M=q_block_m, BLOCK_N=q_block_n, STATS=False,
                GRAD_MASK=grad_scores is not None, **constants,
                grid=rows_grid, warmup=False,
            )  # fmt: skip
    grad_mask = None
    if grad_scores is not None and attn_mask is not None:
        scores = grad_scores.view(*query.shape[:-1], launch.key_len)
        grad_mask = _sum_to_mask(scores, attn_mask)
    return (
        grad_q.reshape(query.shape) if grad_q is not None and needs[0] else None,
        grad_k.reshape(key.shape) if grad_k is not None and needs[1] else None,
        grad_v.reshape(value.shape) if grad_v is not None and needs[2] else None,
        grad_mask,
    )


def _sum_to_mask(grad_scores: torch.Tensor, attn_mask: torch.Tensor) -> torch.Tensor:
    """The float32 score gradient summed over the dims the mask was broadcast along, in the
    mask's dtype (gems' sum and copy kernels: host code never computes on ATen)."""
    lead = grad_scores.dim() - attn_mask.dim()
    dims = [*range(lead)] + [
        lead + d
        for d, size in enumerate(attn_mask.shape)
        if size == 1 and grad_scores.shape[lead + d] != 1
    ]
    if not dims:
        return copies.to_copy(grad_scores.view(attn_mask.shape), dtype=attn_mask.dtype)
    summed = reductions.sum_dim(grad_scores, dims, keepdim=True, dtype=attn_mask.dtype)
    return summed.view(attn_mask.shape)


class ScaledDotProductAttention(torch.autograd.Function):
    """Saves the inputs (the backward recomputes the rest); the backward runs the Triton
    kernels."""

    @staticmethod
    def forward(ctx: Any, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                attn_mask: torch.Tensor | None, is_causal: bool,
                scale: float | None) -> torch.Tensor:  # fmt: skip
        out, _ = attention_forward(query, key, value, attn_mask, is_causal, scale)
        ctx.save_for_backward(query, key, value, attn_mask)
        ctx.is_causal, ctx.scale = is_causal, scale
        return out

    @staticmethod
    @once_differentiable
    @host.host_code
    def backward(ctx: Any, grad_out: torch.Tensor) -> tuple[Any, ...]:
        query, key, value, attn_mask = ctx.saved_tensors
        grads = attention_backward(
            grad_out, query, key, value, attn_mask, ctx.is_causal, ctx.scale,
            needs=ctx.needs_input_grad[:4],
        )  # fmt: skip
        return (*grads, None, None)


def _broadcasts_to(mask: torch.Tensor, shape: tuple[int, ...]) -> bool:
    try:
        return bool(torch.broadcast_shapes(mask.shape, shape) == shape)
    except RuntimeError:
        return False


def _heads_fit(query: torch.Tensor, key: torch.Tensor, enable_gqa: bool) -> bool:
    if query.dim() < 3:
        return True
    heads, kv_heads = query.shape[-3], key.shape[-3]
    if heads == kv_heads:
        return True
    return enable_gqa and kv_heads > 0 and heads % kv_heads == 0


def is_supported_attention(
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
    """Condition: no dropout; half/float inputs of one dtype and device with the same batch
    dims and matching sizes; head dims in 1..256; key/value heads equal to the query's or, with
    ``enable_gqa``, dividing them; no mask, or a bool mask / additive mask (float32 or the
    query's dtype) broadcastable to (..., L, S) and not combined with ``is_causal``. Everything
    else (including ATen's own argument errors) goes to ATen."""
    tensors = (query, key, value)
    if (
        dropout_p != 0.0
        or len({t.dtype for t in tensors}) != 1
        or len({t.device for t in tensors}) != 1
        or query.dtype not in _DTYPES
        or not query.dim() == key.dim() == value.dim() >= 2
        or not query.shape[:-3] == key.shape[:-3] == value.shape[:-3]
        or key.shape[:-1] != value.shape[:-1]
        or query.shape[-1] != key.shape[-1]
        or not 0 < query.shape[-1] <= _MAX_HEAD_DIM
        or not 0 < value.shape[-1] <= _MAX_HEAD_DIM
        or not _heads_fit(query, key, enable_gqa)
    ):
        return False
    if attn_mask is None:
        return True
    return (
        isinstance(attn_mask, torch.Tensor)
        and not is_causal
        and attn_mask.device == query.device
        and attn_mask.dtype in (torch.bool, torch.float32, query.dtype)
        and _broadcasts_to(attn_mask, (*query.shape[:-1], key.shape[-2]))
    )


def scaled_dot_product_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attn_mask: torch.Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    *,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> torch.Tensor:
    """aten::scaled_dot_product_attention without dropout, differentiable in query, key, value
    and an additive mask (``enable_gqa`` is implied by the head counts; see
    :func:`is_supported_attention`)."""
    if dropout_p:
        raise NotImplementedError("scaled_dot_product_attention: dropout_p > 0 runs on ATen")
    if not _heads_fit(query, key, enable_gqa):
        raise RuntimeError(
            f"key: {key.shape[-3]} heads must equal the query's {query.shape[-3]}, or divide "
            "them with enable_gqa=True"
        )
    return autograd.apply(ScaledDotProductAttention, query, key, value, attn_mask, is_causal, scale)


REGISTRATIONS: Final[tuple[Registration, ...]] = (
    Registration(
        "scaled_dot_product_attention",
        scaled_dot_product_attention,
        condition=is_supported_attention,
        autograd=True,
    ),
)
