"""Peak memory and time of linear + cross-entropy, forward and backward: ATen's ``F.linear`` +
``F.cross_entropy`` against ``gems_kernels.fused.linear_cross_entropy``, in one run.

    python packages/gems-kernels/benchmarks/fused_loss.py                  # 4096 x 32000 x 1024
    python packages/gems-kernels/benchmarks/fused_loss.py --tokens 512 --vocab 8000 --hidden 256

Each variant runs in its own process on identical inputs (seeded): on a GPU the peak is
``torch.cuda.max_memory_allocated`` above what the inputs hold; on the CPU it is the process's
peak resident memory (``ru_maxrss``) above its resident memory once the inputs exist. Time: the
best of ``--repeat`` forward+backward passes after one warm-up. The parent then checks that loss
and gradients agree (relative to the largest magnitude, 1e-5 in float32). ``--gems`` runs the
fused variant's products under ``use_gems()`` (gems' matmul; on the CPU only sensible with
``TRITON_INTERPRET=1`` and small shapes). Prints the table; with ``$OUT`` also writes
``gems_fused_loss.json`` there.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import torch
import torch.nn.functional as F
from gems_kernels.dispatch import use_gems
from gems_kernels.fused import linear_cross_entropy

VARIANTS = ("aten", "fused")


def _inputs(args: argparse.Namespace, device: torch.device) -> tuple[torch.Tensor, ...]:
    generator = torch.Generator().manual_seed(0)
    dtype = getattr(torch, args.dtype)
    hidden = torch.randn(args.tokens, args.hidden, generator=generator) * 0.5
    weight = torch.randn(args.vocab, args.hidden, generator=generator) / args.hidden**0.5
    target = torch.randint(0, args.vocab, (args.tokens,), generator=generator)
    return (
        hidden.to(device, dtype).requires_grad_(),
        weight.to(device, dtype).requires_grad_(),
        target.to(device),
    )


def _resident_kib() -> int:
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def _step(variant: str, args: argparse.Namespace, inputs: Sequence[torch.Tensor]) -> Any:
    hidden, weight, target = inputs
    hidden.grad = weight.grad = None
    if variant == "aten":
        loss = F.cross_entropy(F.linear(hidden, weight), target)
    else:
        with use_gems() if args.gems else contextlib.nullcontext():
            loss = linear_cross_entropy(hidden, weight, target, chunk_size=args.chunk)
    loss.backward()
    return loss


def measure(
    device: torch.device, step: Callable[[], Any], count: int
) -> tuple[Any, int, list[float]]:
    """``step`` run ``count`` times: its last result, the peak memory in bytes above what was in
    use before (``max_memory_allocated`` on a GPU, peak resident memory on the CPU) and each
    run's seconds."""
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    else:
        base = _resident_kib() * 1024
    times = []
    for _ in range(count):
        start = time.perf_counter()
        result = step()
        if device.type == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    if device.type == "cuda":
        peak = torch.cuda.max_memory_allocated() - base
    else:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - base
    return result, peak, times


def run_variant(variant: str, args: argparse.Namespace, result_path: Path) -> None:
    """One variant in this process: warm-up, timed passes, peak memory; saves the results."""
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    inputs = _inputs(args, device)
    loss, peak, times = measure(device, lambda: _step(variant, args, inputs), args.repeat + 1)
    hidden, weight, _ = inputs
    torch.save(
        {
            "loss": loss.detach().cpu(),
            "grad_hidden": hidden.grad.cpu(),  # type: ignore[union-attr]
            "grad_weight": weight.grad.cpu(),  # type: ignore[union-attr]
            "peak": peak,
            "seconds": min(times[1:]),
            "device": device.type,
        },
        result_path,
    )


def run_variants(
    parser: argparse.ArgumentParser,
    variants: Sequence[str],
    run_variant: Callable[[str, argparse.Namespace, Path], None],
    script: str,
    argv: Sequence[str] | None,
) -> tuple[argparse.Namespace, dict[str, Any] | None]:
    """Parse ``argv``; in a child (``--variant V --result PATH``) run that variant and return
    no results; else run ``script`` once per variant, each in its own process, and return
    what each saved."""
    parser.add_argument("--variant", choices=variants, help=argparse.SUPPRESS)
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.variant:
        run_variant(args.variant, args, args.result)
        return args, None
    forwarded = list(argv if argv is not None else sys.argv[1:])
    results = {}
    with tempfile.TemporaryDirectory() as scratch:
        for variant in variants:
            path = Path(scratch) / f"{variant}.pt"
            command = [sys.executable, script, *forwarded, "--variant", variant]
            subprocess.run([*command, "--result", str(path)], check=True, timeout=1800)
            results[variant] = torch.load(path)
    return args, results


def _relative(a: torch.Tensor, b: torch.Tensor) -> float:
    scale = float(b.abs().max()) or 1.0
    return float((a.double() - b.double()).abs().max()) / scale


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=4096)
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--hidden", type=int, default=1024)
    parser.add_argument("--chunk", type=int, default=4096)
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--gems", action="store_true")
    args, results = run_variants(parser, VARIANTS, run_variant, __file__, argv)
    if results is None:
        return 0
    aten, fused = results["aten"], results["fused"]
    errors = {
        name: _relative(fused[name], aten[name]) for name in ("loss", "grad_hidden", "grad_weight")
    }
    tolerance = 1e-5 if args.dtype == "float32" else 2e-2
    agrees = all(error <= tolerance for error in errors.values())
    shape = f"{args.tokens} tokens x {args.vocab} vocab x {args.hidden} hidden, {args.dtype}"
    print(f"linear + cross_entropy, forward + backward, {shape}, on {aten['device']}")
    print(f"{'variant':<8} {'peak MiB':>10} {'time s':>8} {'peak / ATen':>12}")
    for name, result in results.items():
        ratio = result["peak"] / aten["peak"]
        print(f"{name:<8} {result['peak'] / 2**20:>10.1f} {result['seconds']:>8.2f} {ratio:>12.3f}")
    print(
        "fused vs ATen, largest difference relative to ATen's largest magnitude: "
        + ", ".join(f"{name} {error:.2e}" for name, error in errors.items())
        + f" ({'agree' if agrees else 'DISAGREE'} within {tolerance:g})"
    )
    out_dir = os.environ.get("OUT")
    if out_dir:
        summary = {
            "shape": vars(args) | {"variant": None, "result": None},
            "device": aten["device"],
            "peak_bytes": {name: r["peak"] for name, r in results.items()},
            "seconds": {name: r["seconds"] for name, r in results.items()},
            "relative_errors": errors,
            "agrees": agrees,
        }
        (Path(out_dir) / "gems_fused_loss.json").write_text(json.dumps(summary, indent=2))
    return 0 if agrees else 1


if __name__ == "__main__":
    raise SystemExit(main())
