"""Per-token log-probabilities of the targets through an LM head, chunked over the vocabulary:
the (tokens, vocab) logits never exist.

The same blocks as :func:`~gems_kernels.fused.linear_cross_entropy` (a token's log-probability
is minus its cross-entropy, unreduced), folded into a few float32 numbers per token: the online
logsumexp, the target's logit and, on request, what a trainer logs beside the loss: the
distribution's entropy (with its gradient), whether the target is the first most likely token,
the mean logit and ``log(sum_v p_v^2)`` (these three without gradient). The backward recomputes
each block and turns it into the logits' gradient in place, then shares the cross-entropy's
products. ``temperature`` divides the logits; tokens whose target is ``ignore_index`` get zeros
and no gradient.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, cast

import torch

from gems_kernels.fused.linear_cross_entropy import (
    accumulation_dtype,
    block_gradients,
    check_head_inputs,
    targets_in,
    vocab_blocks,
)

__all__ = ["OPTIONAL_OUTPUTS", "LinearLogProbs", "TokenLogProbs", "linear_log_probs"]

OPTIONAL_OUTPUTS: Final = ("entropy", "is_top1", "mean_logits", "log_sum_sq_probs")


@dataclass(frozen=True)
class TokenLogProbs:
    """Per-token outputs, each (tokens,); the optional ones ``None`` unless requested."""

    log_probs: torch.Tensor
    entropy: torch.Tensor | None = None
    is_top1: torch.Tensor | None = None
    mean_logits: torch.Tensor | None = None
    log_sum_sq_probs: torch.Tensor | None = None


class _Fold:
    """The running per-token statistics of the blocks seen so far: those ``outputs`` need."""

    def __init__(self, tokens: int, like: torch.Tensor, outputs: tuple[str, ...]) -> None:
        def full(value: float) -> torch.Tensor:
            return torch.full((tokens,), value, device=like.device, dtype=like.dtype)

        self.outputs = outputs
        self.lse, self.picked = full(-torch.inf), full(0.0)
        self.expected = full(0.0)  # sum_v p_v z_v over the blocks seen, under their softmax
        self.max, self.argmax = full(-torch.inf), torch.zeros(tokens, device=like.device).long()
        self.logit_sum, self.lse_twice = full(0.0), full(-torch.inf)

    def add(self, logits: torch.Tensor, target: torch.Tensor, start: int, stop: int) -> None:
        block_lse = torch.logsumexp(logits, dim=1)
        lse = torch.logaddexp(self.lse, block_lse)
        if "entropy" in self.outputs:
            block_expected = (torch.softmax(logits, dim=1) * logits).sum(dim=1)
            self.expected = (
                torch.exp(self.lse - lse) * self.expected
                + torch.exp(block_lse - lse) * block_expected
            )
        self.lse = lse
        rows, columns = targets_in(target, start, stop)
        self.picked[rows] = logits[rows, columns]
        if "is_top1" in self.outputs:
            block_max, block_argmax = logits.max(dim=1)  # the first maximum of the block
            later = block_max > self.max  # strictly: a tie keeps the earlier token
            self.argmax = torch.where(later, block_argmax + start, self.argmax)
            self.max = torch.maximum(self.max, block_max)
        if "mean_logits" in self.outputs:
            self.logit_sum += logits.sum(dim=1)
        if "log_sum_sq_probs" in self.outputs:
            self.lse_twice = torch.logaddexp(self.lse_twice, torch.logsumexp(2 * logits, dim=1))


class LinearLogProbs(torch.autograd.Function):
    """Saves the inputs, each token's logsumexp and entropy; the backward recomputes the blocks."""

    @staticmethod
    def forward(ctx: Any, hidden: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                target: torch.Tensor, ignore_index: int, chunk_size: int,
                outputs: tuple[str, ...]) -> tuple[torch.Tensor | None, ...]:  # fmt: skip
        ctx.set_materialize_grads(False)  # an entropy logged, not trained, sends no gradient
        like = torch.empty((), device=hidden.device, dtype=accumulation_dtype(hidden.dtype))
        fold = _Fold(hidden.shape[0], like, outputs)
        for start, stop, logits in vocab_blocks(hidden, weight, bias, chunk_size):
            fold.add(logits, target, start, stop)
            del logits
        valid = target != ignore_index

        def masked(value: torch.Tensor) -> torch.Tensor:
            return torch.where(valid, value, torch.zeros_like(value))

        entropy = masked(fold.lse - fold.expected)
        computed = {
            "entropy": lambda: entropy,
            "is_top1": lambda: masked(fold.argmax == target),
            "mean_logits": lambda: masked(fold.logit_sum / weight.shape[0]),
            "log_sum_sq_probs": lambda: masked(fold.lse_twice - 2 * fold.lse),
        }
        optional = [computed[name]() if name in outputs else None for name in OPTIONAL_OUTPUTS]
        ctx.save_for_backward(hidden, weight, bias, target, valid, fold.lse, entropy)
        ctx.chunk_size = chunk_size
        ctx.mark_non_differentiable(*(value for value in optional[1:] if value is not None))
        return masked(fold.picked - fold.lse), *optional

    @staticmethod
    def backward(ctx: Any, grad_log_probs: torch.Tensor | None,
                 grad_entropy: torch.Tensor | None, *_: Any) -> tuple[Any, ...]:  # fmt: skip
        hidden, weight, bias, target, valid, lse, entropy = ctx.saved_tensors
        accumulation = accumulation_dtype(hidden.dtype)

        def masked(grad: torch.Tensor | None) -> torch.Tensor:
            if grad is None:
                return torch.zeros_like(lse)
            return torch.where(valid, grad.to(accumulation), 0.0)

        from_log_probs, from_entropy = masked(grad_log_probs), masked(grad_entropy)

        def gradient(logits: torch.Tensor, start: int, stop: int) -> None:
            # d log p_t / dz_v = [v = t] - p_v;  d entropy / dz_v = -p_v (log p_v + entropy)
            log_p = logits.sub_(lse[:, None])
            scale = from_log_probs[:, None]
            if grad_entropy is not None:
                scale = from_entropy[:, None] * (log_p + entropy[:, None]) + scale
            logits.exp_().mul_(scale).neg_()  # log_p is logits: now -p_v * scale
            rows, columns = targets_in(target, start, stop)
            logits[rows, columns] += from_log_probs[rows]

        grads = block_gradients(
            hidden, weight, bias, ctx.chunk_size, ctx.needs_input_grad, gradient
        )
        return *grads, None, None, None, None


def linear_log_probs(
    hidden: torch.Tensor,
    weight: torch.Tensor,
    target: torch.Tensor,
    bias: torch.Tensor | None = None,
    temperature: float = 1.0,
    ignore_index: int = -100,
    chunk_size: int = 4096,
    outputs: tuple[str, ...] = (),
) -> TokenLogProbs:
    """``log_softmax(linear(hidden, weight, bias) / temperature)`` at ``target``, per token,
    without the full logits; ``outputs`` names the optional fields (``OPTIONAL_OUTPUTS``) to fill.

    ``hidden`` (tokens, features), ``weight`` (vocab, features), ``target`` (tokens,) int64.
    The per-token results are float32 (float64 for float64 inputs).
    """
    check_head_inputs("linear_log_probs", hidden, weight, target, bias, chunk_size)
    unknown = [name for name in outputs if name not in OPTIONAL_OUTPUTS]
    if unknown:
        raise ValueError(
            f"linear_log_probs: outputs expected among {list(OPTIONAL_OUTPUTS)}, got {unknown}"
        )
    if not isinstance(temperature, (int, float)) or not temperature > 0:
        raise ValueError(f"linear_log_probs: temperature expected > 0, got {temperature!r}")
    if temperature != 1.0:  # dividing the inputs divides the logits; autograd carries it back
        hidden = hidden / temperature
        bias = None if bias is None else bias / temperature
    apply = cast(Callable[..., tuple[torch.Tensor, ...]], LinearLogProbs.apply)
    log_probs, *optional = apply(
        hidden, weight, bias, target.long(), ignore_index, chunk_size, tuple(outputs)
    )
    return TokenLogProbs(log_probs, *optional)
