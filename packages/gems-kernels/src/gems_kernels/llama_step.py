"""A Llama-style training step in plain eager PyTorch: the end-to-end workload of the tests and
the GPU benchmark.

One decoder block (RMSNorm, rotary embedding as Llama writes it, grouped-query causal
``scaled_dot_product_attention``, SwiGLU MLP) between a token embedding and a language-model head
with cross-entropy; AdamW (``foreach`` or ``fused``), gradient-norm clipping, and optionally bf16
autocast with a GradScaler's unscale and inf check. Nothing here calls gems: a caller runs the step
under :func:`gems_kernels.use_gems` or not.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["LlamaConfig", "LlamaStep", "TinyLlama", "rotate_half"]


@dataclass(frozen=True)
class LlamaConfig:
    """Model sizes; the defaults are small enough for Triton's interpreter."""

    vocab: int = 48
    width: int = 32
    heads: int = 4
    kv_heads: int = 2
    hidden: int = 48
    batch: int = 2
    length: int = 8


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """(-x2, x1) for the two halves of the last dim, as Llama's rotary embedding writes it."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class TinyLlama(nn.Module):
    """Embedding, one pre-norm decoder block and a language-model head."""

    cos: torch.Tensor
    sin: torch.Tensor

    def __init__(self, config: LlamaConfig) -> None:
        super().__init__()
        self.config = config
        head_dim = config.width // config.heads
        self.embed = nn.Embedding(config.vocab, config.width)
        self.attn_norm = nn.RMSNorm(config.width, eps=1e-6)
        self.q = nn.Linear(config.width, config.heads * head_dim, bias=False)
        self.k = nn.Linear(config.width, config.kv_heads * head_dim, bias=False)
        self.v = nn.Linear(config.width, config.kv_heads * head_dim, bias=False)
        self.o = nn.Linear(config.heads * head_dim, config.width, bias=False)
        self.mlp_norm = nn.RMSNorm(config.width, eps=1e-6)
        self.gate = nn.Linear(config.width, config.hidden, bias=False)
        self.up = nn.Linear(config.width, config.hidden, bias=False)
        self.down = nn.Linear(config.hidden, config.width, bias=False)
        self.final_norm = nn.RMSNorm(config.width, eps=1e-6)
        self.head = nn.Linear(config.width, config.vocab, bias=False)
        inverse = 1.0 / (10000.0 ** (torch.arange(0, head_dim, 2).float() / head_dim))
        angles = torch.outer(torch.arange(config.length).float(), inverse)
        self.register_buffer("cos", torch.cat((angles, angles), -1).cos(), persistent=False)
        self.register_buffer("sin", torch.cat((angles, angles), -1).sin(), persistent=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Logits of shape (batch * length, vocab)."""
        config = self.config
        batch, length = tokens.shape
        x = self.embed(tokens)
        h = self.attn_norm(x)
        q = self.q(h).view(batch, length, config.heads, -1).transpose(1, 2)
        k = self.k(h).view(batch, length, config.kv_heads, -1).transpose(1, 2)
        v = self.v(h).view(batch, length, config.kv_heads, -1).transpose(1, 2)
        cos, sin = self.cos[:length], self.sin[:length]
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        attended = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        x = x + self.o(attended.transpose(1, 2).reshape(batch, length, -1))
        h = self.mlp_norm(x)
        x = x + self.down(F.silu(self.gate(h)) * self.up(h))
        logits: torch.Tensor = self.head(self.final_norm(x))
        return logits.view(batch * length, -1)


class LlamaStep:
    """Model, optimizer and (with ``autocast``) gradient scaler; :meth:`step` trains once."""

    def __init__(
        self,
        config: LlamaConfig,
        fused: bool = False,
        autocast: bool = False,
        device: str | torch.device = "cpu",
        seed: int = 0,
    ) -> None:
        generator = torch.Generator().manual_seed(seed)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.model = TinyLlama(config).to(device)
        self.tokens = torch.randint(
            0, config.vocab, (config.batch, config.length), generator=generator
        )
        self.tokens = self.tokens.to(device)
        self.targets = torch.roll(self.tokens, -1, dims=1).reshape(-1)
        self.optimizer = torch.optim.AdamW(
            self.model.parameters(),
            lr=1e-2,
            weight_decay=0.1,
            foreach=None if fused else True,
            fused=True if fused else None,
        )
        self.device = torch.device(device)
        self.autocast = autocast
        self.scaler = (
            torch.amp.GradScaler(self.device.type, init_scale=2.0**8) if autocast else None
        )

    def step(self) -> torch.Tensor:
        """One training step; returns the loss (detached)."""
        self.optimizer.zero_grad(set_to_none=True)
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.autocast):
            logits = self.model(self.tokens)
        loss = F.cross_entropy(logits.float(), self.targets)
        if self.scaler is None:
            loss.backward()  # type: ignore[no-untyped-call]
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0, foreach=True)
            self.optimizer.step()
        else:
            self.scaler.scale(loss).backward()  # type: ignore[no-untyped-call]
            self.scaler.unscale_(self.optimizer)
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0, foreach=True)
            self.scaler.step(self.optimizer)
            self.scaler.update()
        return loss.detach()
