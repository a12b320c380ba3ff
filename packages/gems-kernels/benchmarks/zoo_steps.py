"""The model zoo's training steps timed on ATen and on gems: per model, milliseconds per step
(forward, loss, backward, AdamW foreach) in bfloat16 at ``model_zoo.GPU`` sizes on a GPU (at
``model_zoo.TINY`` sizes, one timed step, under ``--smoke``).

Both runs start from the same weights and inputs; a model agrees when their first losses match
(2e-2 relative in bfloat16, 1e-4 in float32). A warm-up step comes first (it compiles gems'
kernels); models stop being started after ``--deadline`` seconds.

    python packages/gems-kernels/benchmarks/zoo_steps.py                     # on a GPU
    python packages/gems-kernels/benchmarks/zoo_steps.py --models llama resnet50 --steps 20
    TRITON_INTERPRET=1 python packages/gems-kernels/benchmarks/zoo_steps.py --smoke --models gpt2
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

import gems_kernels
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import model_zoo
from end_to_end import synchronize

__all__ = ["SMOKE_MODELS", "StepTime", "format_step_times", "main", "time_steps"]

SMOKE_MODELS: Final = ("gpt2", "resnet18")
"""What ``run_h200.py --smoke`` times: one transformer, one convolutional network."""
_TOLERANCE: Final = {torch.bfloat16: 2e-2, torch.float32: 1e-4}


@dataclass(frozen=True)
class StepTime:
    """One model's step on ATen and on gems."""

    model: str
    dtype: str
    aten_ms: float
    gems_ms: float
    aten_loss: float
    gems_loss: float
    matches: bool

    @property
    def speedup(self) -> float:
        """ATen's time over gems'."""
        return self.aten_ms / self.gems_ms


def _time_step(
    case: model_zoo.Case, gems: bool, steps: int, device: torch.device
) -> tuple[float, float]:
    """(milliseconds per step over ``steps`` timed steps after a warm-up step, first loss)."""
    optimizer = torch.optim.AdamW(case.model.parameters(), lr=1e-4, foreach=True)

    def step() -> torch.Tensor:
        optimizer.zero_grad(set_to_none=True)
        loss, _ = case.loss(case.model, case.inputs)
        loss.backward()
        optimizer.step()
        return loss.detach()

    context: Any = gems_kernels.use_gems() if gems else contextlib.nullcontext()
    with context:
        first_loss = float(step())
        synchronize(device)
        start = time.perf_counter()
        for _ in range(steps):
            step()
        synchronize(device)
        elapsed = time.perf_counter() - start
    return 1000 * elapsed / steps, first_loss


def time_steps(
    models: Sequence[str], smoke: bool, dtype: torch.dtype, steps: int, deadline: float
) -> list[StepTime]:
    """Each model's step on ATen then on gems, until ``deadline`` seconds have passed."""
    size = model_zoo.TINY if smoke else model_zoo.GPU
    device = torch.device("cpu" if smoke else "cuda")
    started = time.perf_counter()
    results = []
    for name in models:
        if time.perf_counter() - started > deadline:
            print(f"deadline: {name} and later models not run", flush=True)
            break
        torch.manual_seed(0)
        built = model_zoo.build(name, size)
        aten_ms, aten_loss = _time_step(built.to(dtype, device), False, steps, device)
        gems_ms, gems_loss = _time_step(built.to(dtype, device), True, steps, device)
        result = StepTime(
            model=name,
            dtype=str(dtype).removeprefix("torch."),
            aten_ms=aten_ms,
            gems_ms=gems_ms,
            aten_loss=aten_loss,
            gems_loss=gems_loss,
            matches=abs(gems_loss - aten_loss) <= _TOLERANCE[dtype] * abs(aten_loss),
        )
        results.append(result)
        print(format_step_times([result]).splitlines()[-1], flush=True)
    return results


def format_step_times(results: Sequence[StepTime]) -> str:
    """A table: model, milliseconds per step of each, speedup, first losses, agreement."""
    lines = [
        f"{'model':<14} {'dtype':<9} {'ATen ms':>10} {'gems ms':>10} {'speedup':>8} "
        f"{'ATen loss':>10} {'gems loss':>10}  ok"
    ]
    for r in results:
        lines.append(
            f"{r.model:<14} {r.dtype:<9} {r.aten_ms:>10.2f} {r.gems_ms:>10.2f} {r.speedup:>8.2f} "
            f"{r.aten_loss:>10.4f} {r.gems_loss:>10.4f}  {'yes' if r.matches else 'NO'}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    models = list(model_zoo.MODELS)
    parser.add_argument("--models", nargs="+", choices=models, default=None)
    parser.add_argument("--smoke", action="store_true", help="TINY sizes on the CPU interpreter")
    parser.add_argument("--dtype", choices=["bfloat16", "float32"], default="bfloat16")
    parser.add_argument("--steps", type=int, default=None, help="timed steps (10; 1 in smoke)")
    parser.add_argument("--deadline", type=float, default=420.0)
    args = parser.parse_args(argv)
    if not args.smoke and not torch.cuda.is_available():
        parser.error("no GPU: use --smoke (with TRITON_INTERPRET=1) on a CPU-only machine")
    chosen = args.models or (list(SMOKE_MODELS) if args.smoke else models)
    steps = args.steps or (1 if args.smoke else 10)
    results = time_steps(chosen, args.smoke, getattr(torch, args.dtype), steps, args.deadline)
    print()
    print(format_step_times(results), flush=True)
    out_dir = os.environ.get("OUT")
    if out_dir:
        target = Path(out_dir) / "gems_zoo_steps_h200.json"
        rows = [{**asdict(r), "speedup": r.speedup} for r in results]
        target.write_text(json.dumps(rows, indent=2))
        print(f"wrote {target}")
    return 0 if all(r.matches for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
