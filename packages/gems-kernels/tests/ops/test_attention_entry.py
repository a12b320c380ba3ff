"""The SDPA entry points below the composite, called directly, against ATen's CPU attention in
float64 (the CUDA-only entry points have no CPU kernel in ATen to compare with directly)."""

from __future__ import annotations

from pathlib import Path

import gems_kernels
import pytest
import torch

ATEN = torch.ops.aten


def _qkv(kv_heads: int = 2) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return torch.randn(2, 2, 5, 8), torch.randn(2, kv_heads, 7, 8), torch.randn(2, kv_heads, 7, 8)


def _reference(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, grad: torch.Tensor
) -> tuple[torch.Tensor, ...]:
    q, k, v = (t.detach().double().requires_grad_() for t in (q, k, v))
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
    out.backward(grad.double())
    assert q.grad is not None and k.grad is not None and v.grad is not None
    return tuple(t.float() for t in (out.detach(), q.grad, k.grad, v.grad))


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("entry", ["flash", "flash_for_cpu", "efficient"])
def test_forward_and_backward(entry: str, causal: bool, recorded: Path) -> None:
    q, k, v = _qkv()
    grad = torch.randn(2, 2, 5, 8)
    expected = _reference(q, k, v, causal, grad)
    with gems_kernels.use_gems(record=True, record_path=recorded):
        if entry == "flash":
            out, lse, cq, ck, mq, mk, seed, offset, _ = ATEN._scaled_dot_product_flash_attention(
                q, k, v, 0.0, causal
            )
            grads = ATEN._scaled_dot_product_flash_attention_backward(
                grad, q, k, v, out, lse, cq, ck, mq, mk, 0.0, causal, seed, offset
            )
        elif entry == "flash_for_cpu":
            out, lse = ATEN._scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, causal)
            grads = ATEN._scaled_dot_product_flash_attention_for_cpu_backward(
                grad, q, k, v, out, lse, 0.0, causal
            )
        else:
            out, lse, seed, offset = ATEN._scaled_dot_product_efficient_attention(
                q, k, v, None, True, 0.0, causal
            )
            grads = ATEN._scaled_dot_product_efficient_attention_backward(
                grad, q, k, v, None, out, lse, seed, offset, 0.0, [True, True, True, False],
                causal,
            )  # fmt: skip
    for actual, wanted in zip((out, *grads[:3]), expected, strict=True):
        torch.testing.assert_close(actual, wanted, rtol=1e-4, atol=1e-5)
    assert len(recorded.read_text().split()) == 2  # forward and backward both ran on gems


def test_cpu_forward_matches_aten_logsumexp() -> None:
    """Output and logsumexp against ATen's CPU entry point run in float64 (the reference)."""
    q, k, v = _qkv()
    out, lse = ATEN._scaled_dot_product_flash_attention_for_cpu(q.double(), k.double(), v.double())
    with gems_kernels.use_gems():
        gems_out, gems_lse = ATEN._scaled_dot_product_flash_attention_for_cpu(q, k, v)
    torch.testing.assert_close(gems_out, out.float(), rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(gems_lse, lse.float(), rtol=1e-4, atol=1e-5)


def test_cpu_backward_takes_atens_logsumexp(recorded: Path) -> None:
    """A forward that ran on ATen (outside gems) and a backward on gems: ATen's CPU logsumexp
    is a (B, H, L) view of (B, L, H) memory, which the backward reads through its strides."""
    q, k, v = _qkv()
    grad = torch.randn(2, 2, 5, 8)
    expected = _reference(q, k, v, False, grad)
    out, lse = ATEN._scaled_dot_product_flash_attention_for_cpu(q, k, v)
    assert not lse.is_contiguous()
    with gems_kernels.use_gems(record=True, record_path=recorded):
        grads = ATEN._scaled_dot_product_flash_attention_for_cpu_backward(
            grad, q, k, v, out, lse, 0.0, False
        )
    for actual, wanted in zip(grads, expected[1:], strict=True):
        torch.testing.assert_close(actual, wanted, rtol=1e-4, atol=1e-5)
    assert recorded.read_text().split() == ["_scaled_dot_product_flash_attention_for_cpu_backward"]
