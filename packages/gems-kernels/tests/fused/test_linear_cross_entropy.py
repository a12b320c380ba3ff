"""The chunked linear + cross-entropy against a float64 linear + cross_entropy (issue 27)."""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torch.nn.functional as F
from gems_kernels import fused
from gems_kernels.accuracy import assert_close, to_reference
from torch.utils._python_dispatch import TorchDispatchMode

TOKENS, FEATURES, VOCAB = 13, 8, 37


def _problem(dtype: torch.dtype, bias: bool) -> tuple[torch.Tensor, ...]:
    generator = torch.Generator().manual_seed(0)
    hidden = torch.randn(TOKENS, FEATURES, generator=generator).to(dtype)
    weight = torch.randn(VOCAB, FEATURES, generator=generator).to(dtype)
    target = torch.randint(0, VOCAB, (TOKENS,), generator=generator)
    target[[2, 7]] = -100  # ignored
    target[0], target[1] = 0, VOCAB - 1  # the first and the last column
    b = torch.randn(VOCAB, generator=generator).to(dtype) if bias else None
    return hidden, weight, target, b


def _grads(loss_fn: Any, hidden: torch.Tensor, weight: torch.Tensor, target: torch.Tensor,
           bias: torch.Tensor | None) -> tuple[torch.Tensor, ...]:  # fmt: skip
    leaves = [
        t.detach().requires_grad_() if t is not None else None for t in (hidden, weight, bias)
    ]
    loss = loss_fn(leaves[0], leaves[1], target, leaves[2])
    loss.backward()
    return (loss.detach(), *(leaf.grad for leaf in leaves if leaf is not None))


def _reference(reduction: str) -> Any:
    def run(hidden: Any, weight: Any, target: Any, bias: Any) -> torch.Tensor:
        return F.cross_entropy(F.linear(hidden, weight, bias), target, reduction=reduction)

    return run


@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("bias", [False, True], ids=["no-bias", "bias"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["float32", "bfloat16"])
def test_loss_and_gradients_against_float64(dtype: torch.dtype, bias: bool, reduction: str) -> None:
    hidden, weight, target, b = _problem(dtype, bias)

    def gems(hidden: Any, weight: Any, target: Any, bias: Any) -> torch.Tensor:
        return fused.linear_cross_entropy(
            hidden, weight, target, bias, reduction=reduction, chunk_size=5
        )

    actual = _grads(gems, hidden, weight, target, b)
    expected = _grads(_reference(reduction), *to_reference((hidden, weight)), target,
                      to_reference(b))  # fmt: skip
    assert_close(actual, expected, reduce_size=VOCAB)


class _Shapes(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.shapes: set[tuple[int, ...]] = set()

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        for value in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(value, torch.Tensor):
                self.shapes.add(tuple(value.shape))
        return out


def test_the_full_logits_never_exist() -> None:
    hidden, weight, target, b = _problem(torch.float32, True)
    with _Shapes() as mode:
        _grads(lambda *a: fused.linear_cross_entropy(*a, chunk_size=8), hidden, weight, target, b)
    assert (TOKENS, VOCAB) not in mode.shapes
    assert max(s[1] for s in mode.shapes if len(s) == 2 and s[0] == TOKENS) <= FEATURES


def test_bad_arguments_name_the_field() -> None:
    hidden, weight, target, _ = _problem(torch.float32, False)
    with pytest.raises(ValueError, match=r"hidden \(tokens, features\) and weight"):
        fused.linear_cross_entropy(hidden[:, :3], weight, target)
    with pytest.raises(ValueError, match="target expected int64 of shape"):
        fused.linear_cross_entropy(hidden, weight, target.float())
    with pytest.raises(ValueError, match="reduction expected one of"):
        fused.linear_cross_entropy(hidden, weight, target, reduction="none")
    with pytest.raises(ValueError, match="chunk_size expected a positive int"):
        fused.linear_cross_entropy(hidden, weight, target, chunk_size=0)
