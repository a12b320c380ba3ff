"""Linear + cross-entropy chunked over the vocabulary: the (tokens, vocab) logits never exist.

Forward: for each block of ``chunk_size`` vocabulary rows of the weight, the block's logits
(tokens x chunk, float32), a running max and sum of exponentials per token (an online
logsumexp) and the target's logit when it falls in the block. Backward: the same blocks again,
turned in place into (softmax - one_hot) * grad / count, which gives the block's weight and bias
gradients and adds the block's share of the hidden states' gradient. Peak extra memory is one
block (plus the float32 hidden-state gradient), instead of ATen's logits, log-softmax and their
gradients. The products are ``torch.mm``/``addmm`` calls, so they run on gems' matmul kernels
under ``use_gems``/``enable`` and on ATen's otherwise; the loss accumulates in float32 (as ATen's
``log_softmax`` does for half-precision logits).
"""

from __future__ import annotations

from typing import Any

import torch

from gems_kernels import autograd

__all__ = ["LinearCrossEntropy", "linear_cross_entropy"]

_REDUCTIONS = ("mean", "sum")


def _block_logits(
    hidden: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, start: int, stop: int
) -> torch.Tensor:
    """hidden @ weight[start:stop].T (+ bias), in float32 (float64 stays float64)."""
    block = weight[start:stop]
    if bias is None:
        logits = torch.mm(hidden, block.t())
    else:
        logits = torch.addmm(bias[start:stop], hidden, block.t())
    return logits.to(_accumulation(hidden.dtype))


def _accumulation(dtype: torch.dtype) -> torch.dtype:
    return torch.promote_types(dtype, torch.float32)


def _targets_in(target: torch.Tensor, start: int, stop: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows whose target lies in [start, stop) and those targets' columns in the block."""
    rows = torch.nonzero((target >= start) & (target < stop)).flatten()
    return rows, target[rows] - start


class LinearCrossEntropy(torch.autograd.Function):
    """Saves the inputs and each token's logsumexp; the backward recomputes the blocks."""

    @staticmethod
    def forward(ctx: Any, hidden: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                target: torch.Tensor, ignore_index: int, reduction: str,
                chunk_size: int) -> torch.Tensor:  # fmt: skip
        tokens, vocab = hidden.shape[0], weight.shape[0]
        lse = torch.full(
            (tokens,), -torch.inf, device=hidden.device, dtype=_accumulation(hidden.dtype)
        )
        picked = torch.zeros_like(lse)
        for start in range(0, vocab, chunk_size):
            stop = min(start + chunk_size, vocab)
            logits = _block_logits(hidden, weight, bias, start, stop)
            lse = torch.logaddexp(lse, torch.logsumexp(logits, dim=1))  # online logsumexp
            rows, columns = _targets_in(target, start, stop)
            picked[rows] = logits[rows, columns]
            del logits
        valid = target != ignore_index
        losses = torch.where(valid, lse - picked, 0.0)
        count = valid.sum() if reduction == "mean" else torch.ones((), device=hidden.device)
        loss = losses.sum() / count
        ctx.save_for_backward(hidden, weight, bias, target, lse, count)
        ctx.ignore_index, ctx.chunk_size = ignore_index, chunk_size
        return loss.to(hidden.dtype)

    @staticmethod
    def backward(ctx: Any, grad_loss: torch.Tensor) -> tuple[Any, ...]:
        hidden, weight, bias, target, lse, count = ctx.saved_tensors
        valid = target != ctx.ignore_index
        accumulation = _accumulation(hidden.dtype)
        scale = torch.where(valid, grad_loss.to(accumulation) / count, 0.0)
        grad_hidden = torch.zeros(hidden.shape, device=hidden.device, dtype=accumulation)
        grad_weight = torch.empty_like(weight) if ctx.needs_input_grad[1] else None
        grad_bias = torch.empty_like(bias) if bias is not None and ctx.needs_input_grad[2] else None
        vocab = weight.shape[0]
        for start in range(0, vocab, ctx.chunk_size):
            stop = min(start + ctx.chunk_size, vocab)
            grad_logits = _block_logits(hidden, weight, bias, start, stop)
            grad_logits.sub_(lse[:, None]).exp_()  # the block of softmax, in place
            rows, columns = _targets_in(target, start, stop)
            grad_logits[rows, columns] -= 1.0
            grad_logits.mul_(scale[:, None])
            # float32 products into the float32 hidden-state gradient; the weight's gradient in
            # the weight's dtype, as ATen's linear backward computes it
            grad_hidden.addmm_(grad_logits, weight[start:stop].to(accumulation))
            if grad_weight is not None:
                torch.mm(grad_logits.to(hidden.dtype).t(), hidden, out=grad_weight[start:stop])
            if grad_bias is not None:
                torch.sum(grad_logits, dim=0, out=grad_bias[start:stop])
            del grad_logits
        return grad_hidden.to(hidden.dtype), grad_weight, grad_bias, None, None, None, None


def linear_cross_entropy(
    hidden: torch.Tensor,
    weight: torch.Tensor,
    target: torch.Tensor,
    bias: torch.Tensor | None = None,
    ignore_index: int = -100,
    reduction: str = "mean",
    chunk_size: int = 4096,
) -> torch.Tensor:
    """``cross_entropy(linear(hidden, weight, bias), target)`` without the full logits.

    ``hidden`` (tokens, features), ``weight`` (vocab, features), ``target`` (tokens,) int64;
    ``reduction`` "mean" (over the targets that are not ``ignore_index``) or "sum".
    """
    if hidden.dim() != 2 or weight.dim() != 2 or hidden.shape[1] != weight.shape[1]:
        raise ValueError(
            f"linear_cross_entropy: hidden (tokens, features) and weight (vocab, features) "
            f"expected, got {list(hidden.shape)} and {list(weight.shape)}"
        )
    if target.shape != hidden.shape[:1] or target.dtype not in (torch.int64, torch.int32):
        raise ValueError(
            f"linear_cross_entropy: target expected int64 of shape [{hidden.shape[0]}], got "
            f"{target.dtype} {list(target.shape)}"
        )
    if bias is not None and bias.shape != weight.shape[:1]:
        raise ValueError(
            f"linear_cross_entropy: bias expected shape [{weight.shape[0]}], got {list(bias.shape)}"
        )
    if reduction not in _REDUCTIONS:
        raise ValueError(
            f"linear_cross_entropy: reduction expected one of {_REDUCTIONS}, got {reduction!r}"
        )
    if type(chunk_size) is not int or chunk_size < 1:
        raise ValueError(
            f"linear_cross_entropy: chunk_size expected a positive int, got {chunk_size!r}"
        )
    return autograd.apply(
        LinearCrossEntropy, hidden, weight, bias, target.long(), ignore_index, reduction, chunk_size
    )
