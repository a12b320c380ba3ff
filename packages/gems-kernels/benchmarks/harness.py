"""Timing ATen and gems-kernels on identical inputs in one run, and printing the table.

Each :class:`Case` names an ATen call and how gems runs it: the same call under ``use_gems``
(the dispatcher path users get from ``enable()``) or a direct gems function (fused ops). Latency
comes from ``triton.testing.do_bench`` on GPUs and from a wall-clock loop under the interpreter
(``--smoke``, where numbers only prove the script runs). Host overhead is the per-call wall time
of a one-element input without synchronising, which is what a small op costs on the host. When
``flag_gems`` is installed, the registered-op cases are also timed under ``flag_gems.use_gems()``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

try:
    import gems_kernels
except ImportError:  # a bare checkout: use the source tree next to this script
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    import gems_kernels

from gems_kernels import accuracy

__all__ = ["Case", "Result", "main", "run_cases"]


@dataclass(frozen=True)
class Case:
    """One op, dtype and shape to time."""

    op: str
    dtype: torch.dtype
    shape: tuple[int, ...]
    make_inputs: Callable[[tuple[int, ...], torch.dtype], tuple[Any, ...]]
    aten: Callable[..., Any]
    overloads: Sequence[str] = ()
    gems: Callable[..., Any] | None = None
    bytes_moved: Callable[[tuple[Any, ...], Any], float] | None = None
    flops: Callable[[tuple[int, ...]], float] | None = None
    tiny_shape: tuple[int, ...] | None = None


@dataclass
class Result:
    """Measurements of one case; latencies in milliseconds, overhead in microseconds."""

    op: str
    dtype: str
    shape: list[int]
    aten_ms: float
    gems_ms: float
    speedup: float
    gbps: float | None
    tflops: float | None
    matches: bool
    aten_host_us: float | None = None
    gems_host_us: float | None = None
    extra: dict[str, float] = field(default_factory=dict)


def _outputs_bytes(value: Any) -> float:
    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, (tuple, list)):
        return sum(_outputs_bytes(v) for v in value)
    return 0.0


def default_bytes(inputs: tuple[Any, ...], output: Any) -> float:
    """Bytes read from the tensor inputs plus bytes written to the outputs."""
    return _outputs_bytes(list(inputs)) + _outputs_bytes(output)


@contextlib.contextmanager
def _gems_context(case: Case) -> Iterator[None]:
    if case.gems is None:
        with gems_kernels.use_gems(include=case.overloads):
            yield
    else:
        yield


def _gems_call(case: Case) -> Callable[..., Any]:
    return case.gems if case.gems is not None else case.aten


def _synchronize() -> None:
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


def time_ms(fn: Callable[[], Any], smoke: bool) -> float:
    """Median latency of ``fn`` in milliseconds."""
    if not smoke and torch.cuda.is_available():
        import triton.testing

        return float(triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median"))
    fn()
    samples = []
    for _ in range(3 if smoke else 20):
        start = time.perf_counter()
        fn()
        _synchronize()
        samples.append((time.perf_counter() - start) * 1e3)
    return sorted(samples)[len(samples) // 2]


def host_overhead_us(fn: Callable[[], Any], calls: int) -> float:
    """Wall time per call of ``fn`` on a tiny input, without synchronising in between."""
    fn()
    _synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    elapsed = time.perf_counter() - start
    _synchronize()
    return elapsed / calls * 1e6


def _matches(actual: Any, expected: Any) -> bool:
    try:
        accuracy.assert_close(actual, accuracy.to_reference(expected), reduce_size=1024)
    except AssertionError:
        return False
    return True


def _flag_gems_ms(case: Case, inputs: tuple[Any, ...], smoke: bool) -> float | None:
    """The same ATen call under FlagGems, when ``flag_gems`` is installed (else None)."""
    try:
        import flag_gems  # type: ignore[import-not-found]
    except ImportError:
        return None
    try:
        with flag_gems.use_gems():
            return time_ms(lambda: case.aten(*inputs), smoke)
    except Exception as error:  # FlagGems lacking an op must not stop the gems comparison
        print(f"{case.op}: flag_gems failed: {error!r}", file=sys.stderr)
        return None


def run_case(case: Case, smoke: bool) -> Result:
    """Check gems against ATen on the case's inputs, then time both."""
    inputs = case.make_inputs(case.shape, case.dtype)
    expected = case.aten(*inputs)
    with _gems_context(case):
        actual = _gems_call(case)(*inputs)
        gems_ms = time_ms(lambda: _gems_call(case)(*inputs), smoke)
    aten_ms = time_ms(lambda: case.aten(*inputs), smoke)
    moved = (case.bytes_moved or default_bytes)(inputs, expected)
    result = Result(
        op=case.op,
        dtype=str(case.dtype).replace("torch.", ""),
        shape=list(case.shape),
        aten_ms=aten_ms,
        gems_ms=gems_ms,
        speedup=aten_ms / gems_ms if gems_ms > 0 else math.nan,
        gbps=None if case.flops else moved / (gems_ms * 1e-3) / 1e9,
        tflops=case.flops(case.shape) / (gems_ms * 1e-3) / 1e12 if case.flops else None,
        matches=_matches(actual, expected),
    )
    flag_gems_ms = _flag_gems_ms(case, inputs, smoke) if case.gems is None else None
    if flag_gems_ms is not None:
        result.extra["flag_gems_ms"] = flag_gems_ms
    if case.tiny_shape is not None:
        tiny = case.make_inputs(case.tiny_shape, case.dtype)
        calls = 20 if smoke else 2000
        result.aten_host_us = host_overhead_us(lambda: case.aten(*tiny), calls)
        with _gems_context(case):
            result.gems_host_us = host_overhead_us(lambda: _gems_call(case)(*tiny), calls)
    return result


def run_cases(
    cases: Sequence[Case], smoke: bool, deadline_s: float
) -> tuple[list[Result], list[str]]:
    """Run ``cases`` in order until done or ``deadline_s`` seconds have passed: the results
    and a line per case that raised."""
    start = time.monotonic()
    results: list[Result] = []
    failures: list[str] = []
    for index, case in enumerate(cases):
        if time.monotonic() - start > deadline_s:
            print(f"deadline reached: skipped {len(cases) - index} cases", file=sys.stderr)
            break
        try:
            results.append(run_case(case, smoke))
        except Exception as error:  # report the failing case and keep timing the others
            failures.append(f"{case.op} {case.dtype} {case.shape}: FAILED: {error!r}")
            print(failures[-1], file=sys.stderr)
    return results, failures


def format_table(results: Sequence[Result]) -> str:
    """The results as an aligned text table, with the geometric-mean speedup."""
    header = (
        f"{'op':<22}{'dtype':<10}{'shape':<22}{'aten ms':>10}{'gems ms':>10}"
        f"{'speedup':>9}{'GB/s':>9}{'TFLOPS':>8}{'host us aten/gems':>20}{'ok':>5}"
    )
    lines = [header, "-" * len(header)]
    for r in results:
        host = (f"{r.aten_host_us:.1f}/{r.gems_host_us:.1f}"
                if r.aten_host_us is not None and r.gems_host_us is not None else "")  # fmt: skip
        lines.append(
            f"{r.op:<22}{r.dtype:<10}{'x'.join(map(str, r.shape)):<22}{r.aten_ms:>10.4f}"
            f"{r.gems_ms:>10.4f}{r.speedup:>9.2f}"
            f"{(f'{r.gbps:.0f}' if r.gbps is not None else ''):>9}"
            f"{(f'{r.tflops:.1f}' if r.tflops is not None else ''):>8}"
            f"{host:>20}{('yes' if r.matches else 'NO'):>5}"
            + (f"  flag_gems {r.extra['flag_gems_ms']:.4f} ms" if "flag_gems_ms" in r.extra else "")
        )
    speedups = [r.speedup for r in results if r.speedup > 0 and math.isfinite(r.speedup)]
    if speedups:
        geomean = math.exp(sum(map(math.log, speedups)) / len(speedups))
        lines.append(f"geometric-mean speedup over {len(speedups)} cases: {geomean:.3f}")
    return "\n".join(lines)


def write_json(results: Sequence[Result], path: Path, environment: dict[str, str]) -> None:
    """Results and the environment they were measured in, as JSON."""
    payload = {"environment": environment, "results": [asdict(r) for r in results]}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2))


def environment() -> dict[str, str]:
    """What the numbers were measured on."""
    import triton

    device = torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu (interpreter)"
    return {
        "device": device,
        "torch": torch.__version__,
        "triton": triton.__version__,
        "gems_vendor": gems_kernels.vendor_name,
        "gems_kernels": "source tree",
    }


def main(cases_for: Callable[[bool], Sequence[Case]], name: str,
         argv: Sequence[str] | None = None) -> int:  # fmt: skip
    """Command line shared by the benchmark scripts: ``--smoke``, ``--json``, ``--deadline``."""
    parser = argparse.ArgumentParser(description=f"gems-kernels vs ATen: {name}")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="tiny shapes, few repetitions (CPU interpreter): proves it runs",
    )
    parser.add_argument(
        "--json",
        type=Path,
        default=None,
        help="write results here (default: $OUT/<name>.json when OUT is set)",
    )
    parser.add_argument(
        "--deadline",
        type=float,
        default=420.0,
        help="stop starting new cases after this many seconds",
    )
    parser.add_argument("--only", nargs="*", default=None, help="run only these op names")
    args = parser.parse_args(argv)
    if not args.smoke and not torch.cuda.is_available():
        parser.error("no GPU: use --smoke (with TRITON_INTERPRET=1) on a CPU-only machine")
    cases = [c for c in cases_for(args.smoke) if args.only is None or c.op in args.only]
    if args.smoke:
        # The interpreter evaluates masked-out lanes too; their NaN warnings mean nothing.
        warnings.filterwarnings("ignore", category=RuntimeWarning)
    results, failures = run_cases(cases, args.smoke, args.deadline)
    print(format_table(results))
    out_dir = os.environ.get("OUT")
    target = args.json or (Path(out_dir) / f"{name}.json" if out_dir else None)
    if target is not None:
        write_json(results, target, environment())
        print(f"wrote {target}")
    return 0 if results and not failures and all(r.matches for r in results) else 1
