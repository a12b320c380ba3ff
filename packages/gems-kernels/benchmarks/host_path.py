"""Host overhead of the gems dispatch path on this machine, without a GPU.

Times ``enable()``d calls of small-tensor ops (add, mul, softmax, layer_norm, mm) with the Triton
launch itself stubbed out (``InterpretedFunction.run`` returns at once), so what remains is the
path a GPU call also takes on the host: PyTorch's dispatcher into the Python kernel, the
condition check, planning or the plan-cache lookup, output allocation and the argument list of
the launch. ATen's CPU call of the same op on the same tensors is timed beside it (it does the
arithmetic too, on a few elements), and so is the floor: the same call answered by a Python
kernel that returns the result at once (what any Python-registered kernel pays, composites such
as ``F.layer_norm`` included); "gems own" is the difference. Reports microseconds per call at
steady state: the best of ``--repeats`` rounds of ``--calls`` calls after a warm-up, in thread
CPU time, the rounds of all ops and variants alternating (on a shared machine wall time also
counts the time other processes hold the cores).

    TRITON_INTERPRET=1 python packages/gems-kernels/benchmarks/host_path.py
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import gems_kernels
import torch
import torch.nn.functional as F
from triton.runtime import interpreter  # type: ignore[import-untyped]

TARGET_US = 10.0


def _cases() -> dict[str, tuple[Callable[..., Any], tuple[Any, ...], str]]:
    """name -> (call, arguments, the ATen overload the call reaches below its composites)."""
    x, y = torch.randn(4, 8), torch.randn(4, 8)
    weight, bias = torch.randn(8), torch.randn(8)
    a, b = torch.randn(4, 8), torch.randn(8, 4)
    return {
        "add": (torch.add, (x, y), "add.Tensor"),
        "mul": (torch.mul, (x, y), "mul.Tensor"),
        "softmax": (lambda t: torch.softmax(t, -1), (x,), "_softmax"),
        "layer_norm": (lambda t: F.layer_norm(t, (8,), weight, bias), (x,), "native_layer_norm"),
        "mm": (torch.mm, (a, b), "mm"),
    }


@contextlib.contextmanager
def python_kernel_floor(overload: str, result: Any) -> Iterator[None]:
    """``overload`` answered by a Python kernel that returns ``result`` at once: the cost of the
    call up to a Python kernel (PyTorch's side of the gems path, composites included)."""
    library = torch.library.Library("aten", "IMPL")
    library.impl(overload, lambda *args, **kwargs: result, "CPU")
    try:
        yield
    finally:
        library._destroy()


@contextlib.contextmanager
def launches_stubbed() -> Iterator[list[int]]:
    """Every Triton launch returns at once; yields a one-element launch counter."""
    counter = [0]
    original = interpreter.InterpretedFunction.run

    def run(self: Any, *args: Any, **kwargs: Any) -> None:
        counter[0] += 1

    interpreter.InterpretedFunction.run = run
    try:
        yield counter
    finally:
        interpreter.InterpretedFunction.run = original


def round_us(fn: Callable[..., Any], args: Sequence[Any], calls: int) -> float:
    """Microseconds per call of ``fn(*args)`` over ``calls`` calls, after a short warm-up."""
    for _ in range(max(calls // 10, 10)):
        fn(*args)
    start = time.thread_time()
    for _ in range(calls):
        fn(*args)
    return (time.thread_time() - start) / calls * 1e6


def measure(calls: int, repeats: int) -> list[dict[str, Any]]:
    """Per op: ATen's CPU call, the stubbed gems call and the Python-kernel floor, in
    microseconds (best of ``repeats`` rounds; the rounds of every op and variant alternate, so
    a slow spell of the machine hits all of them), and launches per call."""
    cases = _cases()
    floors = {}
    for name, (fn, args, overload) in cases.items():
        packet, _, suffix = overload.partition(".")
        target = getattr(getattr(torch.ops.aten, packet), suffix or "default")
        floors[name] = (overload, _reached(fn, args, target))
    best: dict[tuple[str, str], float] = {}

    def keep(name: str, variant: str, fn: Callable[..., Any], args: Sequence[Any]) -> None:
        us = round_us(fn, args, calls)
        best[name, variant] = min(best.get((name, variant), float("inf")), us)

    launches = {}
    for _ in range(repeats):
        for name, (fn, args, _) in cases.items():
            keep(name, "aten", fn, args)
        with gems_kernels.use_gems(), launches_stubbed() as counter:
            for name, (fn, args, _) in cases.items():
                keep(name, "gems", fn, args)
                before = counter[0]
                fn(*args)
                launches[name] = counter[0] - before
        for name, (fn, args, _) in cases.items():
            with python_kernel_floor(*floors[name]):
                keep(name, "floor", fn, args)
    return [
        {
            "op": name,
            "aten_us": best[name, "aten"],
            "gems_us": best[name, "gems"],
            "floor_us": best[name, "floor"],
            "gems_own_us": best[name, "gems"] - best[name, "floor"],
            "launches": launches[name],
        }
        for name in cases
    ]


def _reached(fn: Callable[..., Any], args: Sequence[Any], overload: Any) -> Any:
    """What ``overload`` returns inside ``fn(*args)`` (recorded with a dispatch mode)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    seen: list[Any] = []

    class Capture(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, a: Any = (), k: Any = None) -> Any:
            out = func(*a, **(k or {}))
            if func is overload:
                seen.append(out)
            return out

    with Capture():
        fn(*args)
    return seen[0]


def main(argv: Sequence[str] | None = None) -> int:
    """Print the table (and JSON with ``--json``); exit 1 when an op's gems path is over target."""
    parser = argparse.ArgumentParser(description="gems host path per call, launches stubbed")
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    rows = measure(args.calls, args.repeats)
    print(
        f"{'op':<12} {'ATen CPU us':>12} {'gems host us':>13} {'floor us':>9} "
        f"{'gems own us':>12} {'launches':>9}"
    )
    for row in rows:
        print(
            f"{row['op']:<12} {row['aten_us']:>12.2f} {row['gems_us']:>13.2f} "
            f"{row['floor_us']:>9.2f} {row['gems_own_us']:>12.2f} {row['launches']:>9}"
        )
    worst = max(row["gems_us"] for row in rows)
    print(
        f"target: <= {TARGET_US} us of gems host path per call; worst {worst:.2f} us "
        "(floor: the same call answered by a Python kernel that returns at once)"
    )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0 if worst <= TARGET_US else 1


if __name__ == "__main__":
    sys.exit(main())
