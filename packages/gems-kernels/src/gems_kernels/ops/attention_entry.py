"""The SDPA entry points below the composite, on the gems attention kernels: flash
(``_scaled_dot_product_flash_attention`` and its CPU form) and memory-efficient attention,
forward and backward, reached when they are called directly or traced.

Their logsumexp outputs are the gems kernels' (B, H, L) float32 natural-log row logsumexp; the
efficient-attention one is not padded to a multiple of 32 as ATen's CUDA kernel pads it, so it
pairs with the gems backward only. ATen's CPU flash logsumexp is the same quantity (a (B, H, L)
view of (B, L, H) memory), so a CPU forward that ran on ATen has its backward on gems. Dropout and
debug masks go to ATen.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import torch

from gems_kernels.ops.attention import (
    attention_backward,
    attention_forward,
    is_supported_attention,
)
from gems_kernels.ops.registering import Registration

__all__ = [
    "REGISTRATIONS",
    "efficient_attention",
    "efficient_attention_backward",
    "fits_efficient",
    "fits_efficient_backward",
    "fits_flash",
    "fits_flash_backward",
    "fits_flash_cpu",
    "fits_flash_cpu_backward",
    "flash_attention",
    "flash_attention_backward",
    "flash_attention_cpu",
    "flash_attention_cpu_backward",
]


def _seed_like(query: torch.Tensor) -> torch.Tensor:
    return torch.empty((), dtype=torch.int64, device=query.device)


def fits_flash(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    return_debug_mask: bool = False,
    **kwargs: Any,
) -> bool:
    """Condition: no dropout or debug mask, 4-D inputs the gems kernels take."""
    return (
        not return_debug_mask
        and query.dim() == 4
        and is_supported_attention(query, key, value, None, dropout_p, is_causal, enable_gqa=True)
    )


def flash_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    return_debug_mask: bool = False,
    *,
    scale: float | None = None,
) -> tuple[Any, ...]:
    """aten::_scaled_dot_product_flash_attention."""
    out, lse = attention_forward(query, key, value, None, is_causal, scale)
    empty = query.new_empty(0)
    seed = _seed_like(query)
    return out, lse, empty, empty, query.shape[-2], key.shape[-2], seed, seed, empty


def _fits_backward(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    mask: torch.Tensor | None,
    dropout_p: float,
    is_causal: bool,
) -> bool:
    return query.dim() == 4 and is_supported_attention(
        query, key, value, mask, dropout_p, is_causal, enable_gqa=True
    )


def fits_flash_backward(
    grad_out: torch.Tensor, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
    out: torch.Tensor, logsumexp: torch.Tensor, cum_seq_q: Any, cum_seq_k: Any, max_q: Any,
    max_k: Any, dropout_p: float, is_causal: bool, *args: Any, **kwargs: Any,
) -> bool:  # fmt: skip
    """Condition: no dropout, 4-D inputs the gems kernels take."""
    return _fits_backward(query, key, value, None, dropout_p, is_causal)


def fits_flash_cpu_backward(
    grad_out: torch.Tensor, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
    out: torch.Tensor, logsumexp: torch.Tensor, dropout_p: float, is_causal: bool,
    *, attn_mask: torch.Tensor | None = None, scale: float | None = None,
) -> bool:  # fmt: skip
    """Condition: no dropout, 4-D inputs and a mask the gems kernels take."""
    return _fits_backward(query, key, value, attn_mask, dropout_p, is_causal)


def fits_efficient_backward(
    grad_out: torch.Tensor, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
    attn_bias: torch.Tensor | None, out: torch.Tensor, logsumexp: torch.Tensor,
    philox_seed: Any, philox_offset: Any, dropout_p: float, grad_input_mask: Any,
    is_causal: bool = False, **kwargs: Any,
) -> bool:  # fmt: skip
    """Condition: no dropout, 4-D inputs and a bias the gems kernels take."""
    return _fits_backward(query, key, value, attn_bias, dropout_p, is_causal)


def flash_attention_backward(
    grad_out: torch.Tensor,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    out: torch.Tensor,
    logsumexp: torch.Tensor,
    cum_seq_q: torch.Tensor,
    cum_seq_k: torch.Tensor,
    max_q: int,
    max_k: int,
    dropout_p: float,
    is_causal: bool,
    philox_seed: torch.Tensor,
    philox_offset: torch.Tensor,
    *,
    scale: float | None = None,
) -> tuple[Any, ...]:
    """aten::_scaled_dot_product_flash_attention_backward."""
    grads = attention_backward(
        grad_out, query, key, value, None, is_causal, scale, (True, True, True)
    )
    return grads[0], grads[1], grads[2]


def fits_flash_cpu(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    *,
    attn_mask: torch.Tensor | None = None,
    scale: float | None = None,
) -> bool:
    """Condition for the CPU flash entry point: no dropout, inputs and mask the kernels take."""
    return query.dim() == 4 and is_supported_attention(
        query, key, value, attn_mask, dropout_p, is_causal, enable_gqa=True
    )


def flash_attention_cpu(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    *,
    attn_mask: torch.Tensor | None = None,
    scale: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """aten::_scaled_dot_product_flash_attention_for_cpu."""
    return attention_forward(query, key, value, attn_mask, is_causal, scale)


def flash_attention_cpu_backward(
    grad_out: torch.Tensor,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    out: torch.Tensor,
    logsumexp: torch.Tensor,
    dropout_p: float,
    is_causal: bool,
    *,
    attn_mask: torch.Tensor | None = None,
    scale: float | None = None,
) -> tuple[Any, ...]:
    """aten::_scaled_dot_product_flash_attention_for_cpu_backward."""
    grads = attention_backward(
        grad_out, query, key, value, attn_mask, is_causal, scale, (True, True, True),
    )  # fmt: skip
    return grads[0], grads[1], grads[2]


def fits_efficient(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attn_bias: torch.Tensor | None,
    *args: Any,
    **kwargs: Any,
) -> bool:
    """Condition: no dropout, 4-D inputs and a bias the kernels take (not with is_causal)."""
    dropout_p = kwargs.get("dropout_p", args[1] if len(args) > 1 else 0.0)
    is_causal = kwargs.get("is_causal", args[2] if len(args) > 2 else False)
    return query.dim() == 4 and is_supported_attention(
        query, key, value, attn_bias, dropout_p, is_causal, enable_gqa=True
    )


def efficient_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attn_bias: torch.Tensor | None,
    compute_log_sumexp: bool,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    *,
    scale: float | None = None,
) -> tuple[Any, ...]:
    """aten::_scaled_dot_product_efficient_attention."""
    out, lse = attention_forward(query, key, value, attn_bias, is_causal, scale)
    seed = _seed_like(query)
    return out, lse if compute_log_sumexp else lse.new_empty(0), seed, seed


def efficient_attention_backward(
    grad_out: torch.Tensor,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attn_bias: torch.Tensor | None,
    out: torch.Tensor,
    logsumexp: torch.Tensor,
    philox_seed: torch.Tensor,
    philox_offset: torch.Tensor,
    dropout_p: float,
    grad_input_mask: Sequence[bool],
    is_causal: bool = False,
    *,
    scale: float | None = None,
) -> tuple[Any, ...]:
    """aten::_scaled_dot_product_efficient_attention_backward."""
    needs = tuple(bool(n) for n in grad_input_mask)
    grads = attention_backward(grad_out, query, key, value, attn_bias, is_causal, scale, needs)
    return tuple(g if g is not None else query.new_empty(0) for g in grads)


REGISTRATIONS: Final[tuple[Registration, ...]] = (
    # The SDPA entry points below the composite, reached when called directly or traced.
    Registration(
        "_scaled_dot_product_flash_attention",
        flash_attention,
        condition=fits_flash,
    ),
    Registration(
        "_scaled_dot_product_flash_attention_backward",
        flash_attention_backward,
        condition=fits_flash_backward,
    ),
    Registration(
        "_scaled_dot_product_flash_attention_for_cpu",
        flash_attention_cpu,
        condition=fits_flash_cpu,
    ),
    Registration(
        "_scaled_dot_product_flash_attention_for_cpu_backward",
        flash_attention_cpu_backward,
        condition=fits_flash_cpu_backward,
    ),
    Registration(
        "_scaled_dot_product_efficient_attention",
        efficient_attention,
        condition=fits_efficient,
    ),
    Registration(
        "_scaled_dot_product_efficient_attention_backward",
        efficient_attention_backward,
        condition=fits_efficient_backward,
    ),
)
