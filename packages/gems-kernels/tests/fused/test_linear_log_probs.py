"""The chunked per-token log-probabilities (and what a trainer logs beside them) against a
float64 linear + log_softmax, forward and backward (issue 36)."""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torch.nn.functional as F
from gems_kernels import fused
from gems_kernels.accuracy import assert_close, to_reference
from gems_kernels.fused.linear_log_probs import OPTIONAL_OUTPUTS

from .test_linear_cross_entropy import FEATURES, TOKENS, VOCAB, _problem, _Shapes

TEMPERATURE = 0.7
VALUED = ("log_probs", "entropy", "mean_logits", "log_sum_sq_probs")


def _reference(hidden: Any, weight: Any, target: Any, bias: Any) -> dict[str, torch.Tensor]:
    logits = F.linear(hidden, weight, bias) / TEMPERATURE
    log_p = torch.log_softmax(logits, dim=1)
    valid = target != -100
    safe = target.clamp(min=0)
    values = {
        "log_probs": log_p.gather(1, safe[:, None])[:, 0],
        "entropy": -(log_p.exp() * log_p).sum(dim=1),
        "is_top1": logits.argmax(dim=1) == safe,
        "mean_logits": logits.mean(dim=1),
        "log_sum_sq_probs": torch.logsumexp(2 * log_p, dim=1),
    }
    return {
        name: torch.where(valid, value, torch.zeros_like(value)) for name, value in values.items()
    }


def _gems(hidden: Any, weight: Any, target: Any, bias: Any) -> dict[str, torch.Tensor]:
    result = fused.linear_log_probs(
        hidden, weight, target, bias, TEMPERATURE, chunk_size=5, outputs=OPTIONAL_OUTPUTS
    )
    return {name: getattr(result, name) for name in ("log_probs", *OPTIONAL_OUTPUTS)}


def _run(
    fn: Any, hidden: torch.Tensor, weight: torch.Tensor, target: torch.Tensor, bias: Any
) -> tuple[dict[str, torch.Tensor], tuple[torch.Tensor, ...]]:
    """The outputs, and the gradients of a loss mixing log-probs and entropy (both backwards)."""
    leaves = [
        t.detach().requires_grad_() if t is not None else None for t in (hidden, weight, bias)
    ]
    outputs = fn(leaves[0], leaves[1], target, leaves[2])
    mix = torch.linspace(-1.0, 2.0, TOKENS, dtype=outputs["log_probs"].dtype)
    (outputs["log_probs"].sum() + (mix * outputs["entropy"]).sum()).backward()
    return outputs, tuple(leaf.grad for leaf in leaves if leaf is not None)


@pytest.mark.parametrize("bias", [False, True], ids=["no-bias", "bias"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["float32", "bfloat16"])
def test_outputs_and_gradients_against_float64(dtype: torch.dtype, bias: bool) -> None:
    hidden, weight, target, b = _problem(dtype, bias)
    best = F.linear(*to_reference((hidden, weight, b))).argmax(dim=1)
    target[3:6] = best[3:6]  # some targets are the most likely token
    actual, grads = _run(_gems, hidden, weight, target, b)
    expected, expected_grads = _run(_reference, *to_reference((hidden, weight)), target,
                                    to_reference(b))  # fmt: skip
    # per-token results are float32; from half-precision inputs they are judged at its tolerance
    assert all(actual[name].dtype == torch.float32 for name in VALUED)
    assert_close(
        tuple(actual[name].to(dtype) for name in VALUED),
        tuple(expected[name] for name in VALUED),
        reduce_size=VOCAB,
    )
    assert_close(grads, expected_grads, reduce_size=VOCAB)
    if dtype == torch.float32:  # bfloat16 rounding may reorder near-equal logits
        assert torch.equal(actual["is_top1"], expected["is_top1"])
        assert 0 < int(actual["is_top1"].sum()) < TOKENS
    for name in ("is_top1", "mean_logits", "log_sum_sq_probs"):
        assert not actual[name].requires_grad


def test_a_float32_head_serves_bfloat16_hidden_states() -> None:
    """As under autocast: products in bfloat16, each gradient in its input's dtype."""
    hidden, weight, target, b = _problem(torch.float32, True)
    actual, grads = _run(_gems, hidden.bfloat16(), weight, target, b)
    expected, expected_grads = _run(_reference, *to_reference((hidden.bfloat16(), weight)),
                                    target, to_reference(b))  # fmt: skip
    assert [grad.dtype for grad in grads] == [torch.bfloat16, torch.float32, torch.float32]
    assert_close(
        tuple(actual[name].bfloat16() for name in VALUED),
        tuple(expected[name] for name in VALUED),
        reduce_size=VOCAB,
    )
    assert_close(tuple(grad.bfloat16() for grad in grads), expected_grads, reduce_size=VOCAB)


def test_a_tie_counts_the_first_most_likely_token_only() -> None:
    weight = torch.zeros(VOCAB, FEATURES)
    weight[[3, 11]] = 1.0  # two equal best tokens, in different blocks
    hidden = torch.ones(2, FEATURES)
    result = fused.linear_log_probs(
        hidden, weight, torch.tensor([3, 11]), chunk_size=5, outputs=("is_top1",)
    )
    assert result.is_top1 is not None and result.is_top1.tolist() == [True, False]


def test_only_the_requested_outputs_and_log_probs_alone_match_cross_entropy() -> None:
    hidden, weight, target, b = _problem(torch.float32, True)
    result = fused.linear_log_probs(hidden, weight, target, b, chunk_size=5)
    assert (result.entropy, result.is_top1, result.mean_logits) == (None, None, None)
    cross_entropy = fused.linear_cross_entropy(hidden, weight, target, b, reduction="sum")
    assert_close(-result.log_probs.sum(), cross_entropy, reduce_size=TOKENS)


def test_the_full_logits_never_exist() -> None:
    hidden, weight, target, b = _problem(torch.float32, True)
    with _Shapes() as mode:
        _run(_gems, hidden, weight, target, b)
    assert (TOKENS, VOCAB) not in mode.shapes
    assert max(s[1] for s in mode.shapes if len(s) == 2 and s[0] == TOKENS) <= FEATURES


def test_bad_arguments_name_the_field() -> None:
    hidden, weight, target, _ = _problem(torch.float32, False)
    with pytest.raises(ValueError, match="linear_log_probs: target expected int64 of shape"):
        fused.linear_log_probs(hidden, weight, target[1:])
    with pytest.raises(ValueError, match=r"outputs expected among .*, got \['logits'\]"):
        fused.linear_log_probs(hidden, weight, target, outputs=("entropy", "logits"))
    with pytest.raises(ValueError, match="temperature expected > 0, got 0"):
        fused.linear_log_probs(hidden, weight, target, temperature=0)
