"""Step time with checkpoints every N steps against none (synchronous and asynchronous saves),
side by side in one run, and resume time (process start to the first step after a restore).

One process, a model of about 100 MB of fp32 parameters with AdamW (so each checkpoint holds
about 300 MB: parameters and both moments), on CPU::

    /work/bin/wt python packages/trainer-sdk/benchmarks/bench_checkpoint.py --steps 30 --every 10

"step" is the mean wall time of a training step including ``ckpt.step(n)`` (so the save steps'
blocking time is in it); "save blocks" is the mean time ``ckpt.step(n)`` took on the steps that
saved; "overhead" compares the mean step time with the no-checkpoint run.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from torch import nn
from trainer_sdk import checkpoint

WIDTH = 2048
LAYERS = 6  # 6 x 2048 x 2048 fp32 = 100.7 MB of parameters


def build() -> tuple[nn.Module, torch.optim.Optimizer]:
    torch.manual_seed(0)
    model = nn.Sequential(*(nn.Linear(WIDTH, WIDTH) for _ in range(LAYERS)))
    return model, torch.optim.AdamW(model.parameters(), lr=1e-4)


def train_step(model: nn.Module, optimizer: torch.optim.Optimizer, batch: int) -> None:
    loss = model(torch.randn(batch, WIDTH)).square().mean()
    optimizer.zero_grad()
    loss.backward()  # type: ignore[no-untyped-call]
    optimizer.step()


def run(mode: str, steps: int, every: int, batch: int, directory: Path) -> dict[str, float]:
    model, optimizer = build()
    train_step(model, optimizer, batch)  # warm up, and create the optimizer state
    ckpt = None
    if mode != "none":
        ckpt = checkpoint.Checkpointer(
            {"model": model, "optimizer": optimizer},
            directory=directory / mode,
            every=every,
            keep_last=2,
            async_save=mode == "async",
        )
    step_times, save_times = [], []
    for step in range(1, steps + 1):
        started = time.perf_counter()
        train_step(model, optimizer, batch)
        before_save = time.perf_counter()
        if ckpt is not None:
            ckpt.step(step)
        ended = time.perf_counter()
        step_times.append(ended - started)
        if step % every == 0:
            save_times.append(ended - before_save)
    if ckpt is not None:
        ckpt.close()
    return {
        "step": statistics.mean(step_times),
        "save": statistics.mean(save_times) if save_times and ckpt is not None else 0.0,
    }


RESUME_CHILD = """
import time, sys
started = float(sys.argv[2])
sys.path[:0] = sys.argv[3:]
import torch
from trainer_sdk import checkpoint
import bench_checkpoint as bench
model, optimizer = bench.build()
imported = time.time()
ckpt = checkpoint.Checkpointer({"model": model, "optimizer": optimizer}, directory=sys.argv[1])
restored_at = ckpt.restore()
restored = time.time()
bench.train_step(model, optimizer, 8)
print(restored_at, imported - started, restored - imported, time.time() - started)
"""


def resume_time(directory: Path) -> tuple[int, float, float, float]:
    """(step restored, s to import and build, s to restore, s from process start to the end of
    the first step)."""
    started = time.time()
    output = subprocess.run(
        [
            sys.executable,
            "-c",
            RESUME_CHILD,
            str(directory),
            str(started),
            str(Path(__file__).parent),
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    ).stdout.split()
    return int(output[0]), float(output[1]), float(output[2]), float(output[3])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--every", type=int, default=10)
    parser.add_argument("--batch", type=int, default=64)
    args = parser.parse_args()
    params = sum(p.numel() for p in build()[0].parameters())
    print(
        f"model: {params / 1e6:.1f} M fp32 parameters ({params * 4 / 1e6:.0f} MB), AdamW; "
        f"{args.steps} steps, batch {args.batch}, checkpoint every {args.every} steps; "
        f"torch {torch.__version__}, {torch.get_num_threads()} threads"
    )
    with tempfile.TemporaryDirectory() as temporary:
        directory = Path(temporary)
        results = {
            mode: run(mode, args.steps, args.every, args.batch, directory)
            for mode in ("none", "sync", "async")
        }
        print(f"{'checkpoints':<14}{'step (ms)':>11}{'overhead':>10}{'save blocks (ms)':>18}")
        base = results["none"]["step"]
        for mode, result in results.items():
            overhead = (result["step"] / base - 1) * 100
            print(
                f"{mode:<14}{result['step'] * 1e3:>11.1f}{overhead:>9.1f}%"
                f"{result['save'] * 1e3:>18.1f}"
            )
        step, build_s, restore_s, total_s = resume_time(directory / "sync")
        print(
            f"resume from step {step}: import + build {build_s:.2f} s, restore {restore_s:.2f} s, "
            f"process start to end of first step {total_s:.2f} s"
        )


if __name__ == "__main__":
    main()
