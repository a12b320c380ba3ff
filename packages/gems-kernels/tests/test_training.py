"""Training under enable(): losses and gradients follow ATen's step for step."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import gems_kernels
import pytest
import torch
import torch.nn.functional as F
from torch import nn


class Mlp(nn.Module):
    """Embedding, two linear layers with GELU, and a classifier."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(11, 16)
        self.hidden = nn.Linear(16, 32)
        self.out = nn.Linear(32, 5)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.out(F.gelu(self.hidden(self.embed(tokens).mean(1))))


class TransformerBlock(nn.Module):
    """Pre-norm attention (explicit softmax) and a SiLU-gated MLP with residuals."""

    def __init__(self, width: int = 16, heads: int = 2) -> None:
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.norm2 = nn.RMSNorm(width)
        self.gate = nn.Linear(width, 2 * width)
        self.down = nn.Linear(2 * width, width)
        self.head = nn.Linear(width, 7)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, length, width = x.shape
        q, k, v = self.qkv(self.norm1(x)).chunk(3, dim=-1)
        q, k, v = (t.reshape(batch, length, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        mixed = self.attend(q, k, v).transpose(1, 2).reshape(batch, length, width)
        x = x + self.proj(mixed)
        x = x + self.down(F.silu(self.gate(self.norm2(x))))
        return self.head(x).reshape(batch * length, -1)

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """Causal attention of (batch, heads, length, dim) projections."""
        length = q.shape[-2]
        scores = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
        causal = torch.ones(length, length, dtype=torch.bool).triu(1)
        return torch.softmax(scores.masked_fill(causal, float("-inf")), dim=-1) @ v


class SdpaTransformerBlock(TransformerBlock):
    """The same block with four query heads attending causally, through
    scaled_dot_product_attention, to two key/value heads (grouped-query attention)."""

    def __init__(self) -> None:
        super().__init__(heads=4)

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        kv_heads = self.heads // 2
        return F.scaled_dot_product_attention(
            q, k[:, :kv_heads], v[:, :kv_heads], is_causal=True, enable_gqa=True
        )


def train(
    model: nn.Module, inputs: torch.Tensor, target: torch.Tensor, steps: int
) -> tuple[list[float], list[torch.Tensor]]:
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(inputs), target)
        loss.backward()
        losses.append(loss.item())
        optimizer.step()
    grads = [p.grad.clone() for p in model.parameters() if p.grad is not None]
    return losses, grads


def mlp_case() -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    return Mlp(), torch.randint(0, 11, (8, 3)), torch.randint(0, 5, (8,))


def block_case() -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    return TransformerBlock(), torch.randn(2, 5, 16), torch.randint(0, 7, (10,))


def sdpa_block_case() -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    return SdpaTransformerBlock(), torch.randn(2, 5, 16), torch.randint(0, 7, (10,))


EXPECTED_OPS = {
    "mlp": {
        "embedding",
        "embedding_dense_backward",
        "addmm",
        "mm",
        "gelu",
        "gelu_backward",
        "cross_entropy_loss",
    },
    "block": {
        "native_layer_norm",
        "native_layer_norm_backward",
        "rms_norm",
        "bmm",
        "_softmax",
        "_softmax_backward_data",
        "silu",
        "masked_fill.Scalar",
        "addmm",
    },
    "sdpa-block": {"scaled_dot_product_attention", "native_layer_norm", "rms_norm", "addmm"},
}


@pytest.mark.parametrize(
    ("name", "make"),
    [("mlp", mlp_case), ("block", block_case), ("sdpa-block", sdpa_block_case)],
)
def test_training_matches_aten(name: str, make: Callable[..., tuple], tmp_path: Path) -> None:
    torch.manual_seed(0)
    model, inputs, target = make()
    reference = type(model)().double()  # the float64 reference, never ATen's float32 run
    reference.load_state_dict(model.state_dict())
    wide = inputs.double() if inputs.is_floating_point() else inputs
    expected_losses, expected_grads = train(reference, wide, target, steps=3)
    record = tmp_path / "ops.txt"
    gems_kernels.enable(record=True, record_path=record)
    try:
        losses, grads = train(model, inputs, target, steps=3)
    finally:
        gems_kernels.disable()
    torch.testing.assert_close(losses, expected_losses, rtol=1e-4, atol=1e-5)
    assert len(grads) == len(expected_grads)
    for got, want in zip(grads, expected_grads, strict=True):
        torch.testing.assert_close(got, want.to(got.dtype), rtol=1e-3, atol=1e-4)
    ran = set(record.read_text().split())
    assert EXPECTED_OPS[name] <= ran, sorted(EXPECTED_OPS[name] - ran)
