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

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch

from gems_kernels import autograd

__all__ = ["LinearCrossEntropy", "linear_cross_entropy"]

_REDUCTIONS = ("mean", "sum")


def _block_logits(
    hidden: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, start: int, stop: int
) -> torch.Tensor:
    """hidden @ weight[start:stop].T (+ bias), in float32 (float64 stays float64); the product in
    hidden's dtype (the block cast to it, so a float32 head serves bfloat16 hidden states)."""
    block = weight[start:stop].to(hidden.dtype)
    if bias is None:
        logits = torch.mm(hidden, block.t())
    else:
        logits = torch.addmm(bias[start:stop].to(hidden.dtype), hidden, block.t())
    return logits.to(accumulation_dtype(hidden.dtype))


def accumulation_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype a block is computed in: float32, or float64 for float64 inputs."""
    return torch.promote_types(dtype, torch.float32)


def targets_in(target: torch.Tensor, start: int, stop: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows whose target lies in [start, stop) and those targets' columns in the block."""
    rows = torch.nonzero((target >= start) & (target < stop)).flatten()
    return rows, target[rows] - start


def vocab_blocks(
    hidden: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, chunk_size: int
) -> Iterator[tuple[int, int, torch.Tensor]]:
    """``(start, stop, logits)`` for each block of ``chunk_size`` vocabulary rows, one at a time."""
    for start in range(0, weight.shape[0], chunk_size):
        stop = min(start + chunk_size, weight.shape[0])
        yield start, stop, _block_logits(hidden, weight, bias, start, stop)


def block_gradients(
    hidden: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    chunk_size: int,
    needs_input_grad: Sequence[bool],
    to_grad_logits: Callable[[torch.Tensor, int, int], None],
) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
    """The gradients of ``hidden``, ``weight`` and ``bias`` from the blocks' recomputed logits,
    which ``to_grad_logits(logits, start, stop)`` turns into their gradient in place."""
    accumulation = accumulation_dtype(hidden.dtype)
    grad_hidden = torch.zeros(hidden.shape, device=hidden.device, dtype=accumulation)
    grad_weight = torch.empty_like(weight) if needs_input_grad[1] else None
    grad_bias = torch.empty_like(bias) if bias is not None and needs_input_grad[2] else None
    for start, stop, grad_logits in vocab_blocks(hidden, weight, bias, chunk_size):
        to_grad_logits(grad_logits, start, stop)
        # float32 products into the float32 hidden-state gradient; the weight's gradient in
        # hidden's dtype, as ATen's linear backward computes it, stored in the weight's
        grad_hidden.addmm_(grad_logits, weight[start:stop].to(accumulation))
        if grad_weight is not None:
            grad_weight[start:stop] = torch.mm(grad_logits.to(hidden.dtype).t(), hidden)
        if grad_bias is not None:
            torch.sum(grad_logits, dim=0, out=grad_bias[start:stop])
        del grad_logits
    return grad_hidden.to(hidden.dtype), grad_weight, grad_bias


class LinearCrossEntropy(torch.autograd.Function):
    """Saves the inputs and each token's logsumexp; the backward recomputes the blocks."""

    @staticmethod
    def forward(ctx: Any, hidden: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                target: torch.Tensor, ignore_index: int, reduction: str,
                chunk_size: int) -> torch.Tensor:  # fmt: skip
        tokens = hidden.shape[0]
        lse = torch.full(
            (tokens,), -torch.inf, device=hidden.device, dtype=accumulation_dtype(hidden.dtype)
        )
        picked = torch.zeros_like(lse)
        for start, stop, logits in vocab_blocks(hidden, weight, bias, chunk_size):
            lse = torch.logaddexp(lse, torch.logsumexp(logits, dim=1))  # online logsumexp
            rows, columns = targets_in(target, start, stop)
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
        scale = torch.where(valid, grad_loss.to(accumulation_dtype(hidden.dtype)) / count, 0.0)

        def softmax_minus_one_hot(logits: torch.Tensor, start: int, stop: int) -> None:
            logits.sub_(lse[:, None]).exp_()  # the block of softmax, in place
            rows, columns = targets_in(target, start, stop)
            logits[rows, columns] -= 1.0
            logits.mul_(scale[:, None])

        grads = block_gradients(
            hidden, weight, bias, ctx.chunk_size, ctx.needs_input_grad, softmax_minus_one_hot
        )
        return *grads, None, None, None, None


def check_head_inputs(
    caller: str,
    hidden: torch.Tensor,
    weight: torch.Tensor,
    target: torch.Tensor,
    bias: torch.Tensor | None,
    chunk_size: object,
) -> None:
    """ValueError, prefixed with ``caller``, naming the argument that does not fit an LM head:
    ``hidden`` (tokens, features), ``weight`` (vocab, features), ``target`` (tokens,)."""
    if hidden.dim() != 2 or weight.dim() != 2 or hidden.shape[1] != weight.shape[1]:
        raise ValueError(
            f"{caller}: hidden (tokens, features) and weight (vocab, features) "
            f"expected, got {list(hidden.shape)} and {list(weight.shape)}"
        )
    if target.shape != hidden.shape[:1] or target.dtype not in (torch.int64, torch.int32):
        raise ValueError(
            f"{caller}: target expected int64 of shape [{hidden.shape[0]}], got "
            f"{target.dtype} {list(target.shape)}"
        )
    if bias is not None and bias.shape != weight.shape[:1]:
        raise ValueError(
            f"{caller}: bias expected shape [{weight.shape[0]}], got {list(bias.shape)}"
        )
    if type(chunk_size) is not int or chunk_size < 1:
        raise ValueError(f"{caller}: chunk_size expected a positive int, got {chunk_size!r}")


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
    if reduction not in _REDUCTIONS:
        raise ValueError(
            f"linear_cross_entropy: reduction expected one of {_REDUCTIONS}, got {reduction!r}"
        )
    check_head_inputs("linear_cross_entropy", hidden, weight, target, bias, chunk_size)
    return autograd.apply(
        LinearCrossEntropy, hidden, weight, bias, target.long(), ignore_index, reduction, chunk_size
    )
