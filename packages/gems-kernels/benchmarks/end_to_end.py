"""End-to-end case: the Llama-style training step (``gems_kernels.llama_step``) on ATen and on
gems, in tokens per second, for AdamW's foreach path in float32 and its fused path under bf16
autocast with gradient scaling.

Both runs start from the same weights and tokens; the case agrees when their first losses match
(float32: 1e-4 relative; autocast: 2e-3).
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import asdict, dataclass
from typing import Any

import gems_kernels
import torch
from gems_kernels.llama_step import LlamaConfig, LlamaStep

__all__ = ["EndToEndResult", "format_end_to_end", "run_end_to_end", "synchronize"]

# One decoder block at Llama-like proportions: head dim 64, four query heads per key/value head.
GPU_CONFIG = LlamaConfig(
    vocab=32000, width=1024, heads=16, kv_heads=4, hidden=2816, batch=4, length=1024
)
VARIANTS = (("foreach fp32", False, False), ("fused bf16-autocast", True, True))


@dataclass(frozen=True)
class EndToEndResult:
    """Tokens per second of one variant on ATen and on gems, and whether the losses agree."""

    variant: str
    tokens_per_step: int
    aten_tokens_per_s: float
    gems_tokens_per_s: float
    aten_loss: float
    gems_loss: float
    matches: bool

    @property
    def speedup(self) -> float:
        """gems over ATen."""
        return self.gems_tokens_per_s / self.aten_tokens_per_s


def synchronize(device: torch.device) -> None:
    """Wait for the GPU's queued work (nothing to wait for on the CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize()


def _tokens_per_s(
    config: LlamaConfig, fused: bool, autocast: bool, device: torch.device, gems: bool, steps: int
) -> tuple[float, float]:
    """(tokens per second over ``steps`` timed steps after one warm-up step, first loss)."""
    step = LlamaStep(config, fused=fused, autocast=autocast, device=device)
    context: Any = gems_kernels.use_gems() if gems else contextlib.nullcontext()
    with context:
        first_loss = float(step.step())  # compiles the kernels
        synchronize(device)
        start = time.perf_counter()
        for _ in range(steps):
            step.step()
        synchronize(device)
        elapsed = time.perf_counter() - start
    return config.batch * config.length * steps / elapsed, first_loss


def run_end_to_end(smoke: bool) -> list[EndToEndResult]:
    """Both variants; the small interpreter config with one timed step under ``smoke``."""
    config = LlamaConfig() if smoke else GPU_CONFIG
    device = torch.device("cpu" if smoke else "cuda")
    steps = 1 if smoke else 10
    results = []
    for variant, fused, autocast in VARIANTS:
        aten_rate, aten_loss = _tokens_per_s(config, fused, autocast, device, False, steps)
        gems_rate, gems_loss = _tokens_per_s(config, fused, autocast, device, True, steps)
        tolerance = 2e-3 if autocast else 1e-4
        results.append(
            EndToEndResult(
                variant=variant,
                tokens_per_step=config.batch * config.length,
                aten_tokens_per_s=aten_rate,
                gems_tokens_per_s=gems_rate,
                aten_loss=aten_loss,
                gems_loss=gems_loss,
                matches=abs(gems_loss - aten_loss) <= tolerance * abs(aten_loss),
            )
        )
    return results


def format_end_to_end(results: list[EndToEndResult]) -> str:
    """A table: variant, tokens/s of each, speedup, losses, agreement."""
    lines = [
        "end to end: Llama-style training step (tokens/s)",
        f"{'variant':<22} {'ATen':>12} {'gems':>12} {'speedup':>8} {'ATen loss':>10} "
        f"{'gems loss':>10}  ok",
    ]
    for r in results:
        lines.append(
            f"{r.variant:<22} {r.aten_tokens_per_s:>12.1f} {r.gems_tokens_per_s:>12.1f} "
            f"{r.speedup:>8.2f} {r.aten_loss:>10.4f} {r.gems_loss:>10.4f}  "
            f"{'yes' if r.matches else 'NO'}"
        )
    return "\n".join(lines)


def as_json(results: list[EndToEndResult]) -> list[dict[str, Any]]:
    """The results as JSON-ready dicts (speedup included)."""
    return [{**asdict(r), "speedup": r.speedup} for r in results]
