"""Timing ATen and gems-kernels on identical inputs in one run, and printing the table.

Each :class:`Case` names an ATen call and how gems runs it: the same call under ``use_gems``
(the dispatcher path users get from ``enable()``) or a direct gems function (fused ops). Latency
comes from ``triton.testing.do_bench`` on GPUs and from a wall-clock loop under the interpreter
(``--smoke``, where numbers only prove the script runs). Host overhead is the per-call wall time
on a tiny input without synchronising, which is what a small op costs on the host; every case
reports it, in a table of its own grouped by kind (pointwise, reduction, norm, fused, ...).
Competing libraries (:class:`Rival`, built by ``competitors.py``) are timed on their own copies of
the same inputs in the same run, and gems' speedup over each is a column of its own.
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

__all__ = ["Case", "Entry", "Result", "Rival", "RivalResult", "case_kind", "main", "run_cases"]


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


def _same(value: Any) -> Any:
    return value


def _as_given(*inputs: Any) -> tuple[Any, ...]:
    return inputs


def _no_context() -> contextlib.AbstractContextManager[Any]:
    return contextlib.nullcontext()


@dataclass(frozen=True)
class Entry:
    """How a competing library runs one case.

    ``convert`` (untimed) turns its own copies of the case's inputs into its argument layout,
    ``call`` is what is timed, ``restore`` (untimed) turns its output back into ATen's layout for
    the comparison, and ``context`` wraps both (e.g. the library's own dispatcher registration).
    """

    call: Callable[..., Any]
    convert: Callable[..., tuple[Any, ...]] = _as_given
    restore: Callable[[Any], Any] = _same
    context: Callable[[], contextlib.AbstractContextManager[Any]] = _no_context


@dataclass(frozen=True)
class Rival:
    """A competing library: ``entry`` says how it runs a case (None where it lacks the op);
    ``entry`` itself is None when the library could not be imported, and ``note`` says why."""

    name: str
    note: str
    entry: Callable[[Case], Entry | None] | None = None


@dataclass
class RivalResult:
    """A competitor on one case: its latency, gems' speedup over it, its host overhead."""

    ms: float | None = None
    speedup: float | None = None
    host_us: float | None = None
    matches: bool | None = None
    error: str | None = None


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
    kind: str = "other"
    aten_host_us: float | None = None
    gems_host_us: float | None = None
    rivals: dict[str, RivalResult] = field(default_factory=dict)


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


def _op_tags(name: str) -> set[Any]:
    """The tags of any overload of the ATen op ``name`` (``add`` or ``add.Tensor``)."""
    base, _, overload = name.partition(".")
    packet = getattr(torch.ops.aten, base, None)
    if packet is None:
        return set()
    overloads = [overload] if overload else packet.overloads()
    return {tag for each in overloads for tag in getattr(packet, each).tags}


def case_kind(case: Case) -> str:
    """What sort of op a case times, for grouping host overheads: ``fwd+bwd`` for a training
    step, ``fused`` for a direct gems function, else from its ATen ops' tags and names."""
    if case.op.endswith("_fwd_bwd"):
        return "fwd+bwd"
    if case.gems is not None:
        return "fused"
    tags = [_op_tags(name) for name in case.overloads]
    names = " ".join(case.overloads)
    if tags and all(torch.Tag.pointwise in t for t in tags):
        return "pointwise"
    if any(torch.Tag.reduction in t for t in tags):
        return "reduction"
    if "norm" in names or "softmax" in names:
        return "norm"
    if "loss" in names:
        return "loss"
    return "other"


def tiny_shape(case: Case) -> tuple[int, ...]:
    """The case's own tiny shape, else its shape with every size capped at 2."""
    return case.tiny_shape or tuple(min(size, 2) for size in case.shape)


def own_copies(inputs: tuple[Any, ...]) -> tuple[Any, ...]:
    """Fresh tensors equal to ``inputs`` (leaves keep requiring grad), so that a library that
    writes into its arguments cannot change what the others are timed on."""
    return tuple(
        t.detach().clone().requires_grad_(t.requires_grad) if isinstance(t, torch.Tensor) else t
        for t in inputs
    )


def _host_calls(smoke: bool) -> int:
    return 5 if smoke else 1000


def run_rival(
    rival: Rival,
    case: Case,
    inputs: tuple[Any, ...],
    expected: Any,
    gems_ms: float,
    tiny: tuple[Any, ...] | None,
    smoke: bool,
) -> RivalResult | None:
    """Check and time one competitor on its own copies of the inputs (None: it lacks the op)."""
    entry = rival.entry(case) if rival.entry is not None else None
    if entry is None:
        return None
    try:
        args = entry.convert(*own_copies(inputs))
        tiny_args = entry.convert(*own_copies(tiny)) if tiny is not None else None
        with entry.context():
            # Compared at once: a library that works in place overwrites its result when timed.
            matches = _matches(entry.restore(entry.call(*args)), expected)
            ms = time_ms(lambda: entry.call(*args), smoke)
            host_us = (host_overhead_us(lambda: entry.call(*tiny_args), _host_calls(smoke))
                       if tiny_args is not None else None)  # fmt: skip
    except Exception as error:  # a competitor lacking a layout or dtype must not stop the run
        print(f"{case.op} {case.dtype}: {rival.name} failed: {error!r}", file=sys.stderr)
        return RivalResult(error=repr(error))
    return RivalResult(ms=ms, speedup=ms / gems_ms if gems_ms > 0 else math.nan,
                       host_us=host_us, matches=matches)  # fmt: skip


def _measure_host(case: Case, result: Result, smoke: bool) -> tuple[Any, ...] | None:
    """Host overhead of ATen and gems on the case's tiny input, into ``result``; the tiny
    input, or None (with a line on stderr) where the case cannot make or run one."""
    try:
        tiny = case.make_inputs(tiny_shape(case), case.dtype)
        result.aten_host_us = host_overhead_us(lambda: case.aten(*tiny), _host_calls(smoke))
        with _gems_context(case):
            result.gems_host_us = host_overhead_us(
                lambda: _gems_call(case)(*tiny), _host_calls(smoke)
            )
    except Exception as error:  # the timings at the case's own shape still stand
        print(f"{case.op} {case.dtype}: no host overhead on {tiny_shape(case)}: {error!r}",
              file=sys.stderr)  # fmt: skip
        result.aten_host_us = result.gems_host_us = None
        return None
    return tiny


def run_case(case: Case, smoke: bool, rivals: Sequence[Rival] = ()) -> Result:
    """Check gems against ATen on the case's inputs, time both and each rival, and measure the
    host overhead of each on a tiny input."""
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
        kind=case_kind(case),
    )
    tiny = _measure_host(case, result, smoke)
    for rival in rivals:
        outcome = run_rival(rival, case, inputs, expected, gems_ms, tiny, smoke)
        if outcome is not None:
            result.rivals[rival.name] = outcome
    return result


def run_cases(
    cases: Sequence[Case], smoke: bool, deadline_s: float, rivals: Sequence[Rival] = ()
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
            results.append(run_case(case, smoke, rivals))
        except Exception as error:  # report the failing case and keep timing the others
            failures.append(f"{case.op} {case.dtype} {case.shape}: FAILED: {error!r}")
            print(failures[-1], file=sys.stderr)
    return results, failures


def _geomean(values: Sequence[float]) -> float | None:
    kept = [v for v in values if v > 0 and math.isfinite(v)]
    return math.exp(sum(map(math.log, kept)) / len(kept)) if kept else None


def _number(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _pair(name: str, left: str, right: str) -> str:
    """Two right-aligned columns wide enough for headers that hold the rival's ``name``."""
    width = len(name) + 6
    return f"{left:>{width}}{right:>{width}}"


def _rival_columns(result: Result, name: str) -> str:
    """``<name> ms`` and ``vs <name>`` (gems' speedup over it): '-' where it did not run."""
    outcome = result.rivals.get(name)
    if outcome is not None and outcome.error is not None:
        return _pair(name, "error", "-")
    ms = outcome.ms if outcome is not None else None
    speedup = outcome.speedup if outcome is not None else None
    mark = "" if outcome is None or outcome.matches is not False else "!"
    return _pair(name, _number(ms, 4) + mark, _number(speedup, 2))


def _rival_notes(rivals: Sequence[Rival]) -> list[str]:
    return [
        f"{rival.name}: {rival.note}" + ("" if rival.entry is not None else " (columns show -)")
        for rival in rivals
    ]


def format_table(results: Sequence[Result], rivals: Sequence[Rival] = ()) -> str:
    """The results as an aligned text table, with the geometric-mean speedup over ATen and
    over each rival (on the cases it has); '!' marks a rival result that disagrees with ATen."""
    header = (
        f"{'op':<22}{'dtype':<10}{'shape':<22}{'aten ms':>10}{'gems ms':>10}"
        f"{'speedup':>9}{'GB/s':>9}{'TFLOPS':>8}{'ok':>5}"
        + "".join(_pair(r.name, f"{r.name} ms", f"vs {r.name}") for r in rivals)
    )
    lines = [header, "-" * len(header)]
    for r in results:
        lines.append(
            f"{r.op:<22}{r.dtype:<10}{'x'.join(map(str, r.shape)):<22}{r.aten_ms:>10.4f}"
            f"{r.gems_ms:>10.4f}{r.speedup:>9.2f}"
            f"{(f'{r.gbps:.0f}' if r.gbps is not None else ''):>9}"
            f"{(f'{r.tflops:.1f}' if r.tflops is not None else ''):>8}"
            f"{('yes' if r.matches else 'NO'):>5}"
            + "".join(_rival_columns(r, rival.name) for rival in rivals)
        )
    geomean = _geomean([r.speedup for r in results])
    if geomean is not None:
        count = len([r for r in results if r.speedup > 0 and math.isfinite(r.speedup)])
        lines.append(f"geometric-mean speedup over {count} cases: {geomean:.3f}")
    for rival in rivals:
        speedups = [o.speedup for r in results if (o := r.rivals.get(rival.name)) and o.speedup]
        over = _geomean(speedups)
        if over is not None:
            lines.append(
                f"geometric-mean speedup over {rival.name} on its {len(speedups)} cases: {over:.3f}"
            )
    return "\n".join([*lines, *_rival_notes(rivals)])


def _ratio(value: float | None, base: float | None) -> float | None:
    return value / base if value is not None and base else None


def host_overhead_by_kind(results: Sequence[Result]) -> dict[str, dict[str, float | int]]:
    """Per case kind: how many cases, and the geometric mean and worst gems/ATen host ratio."""
    summary: dict[str, dict[str, float | int]] = {}
    for kind in sorted({r.kind for r in results}):
        ratios = [ratio for r in results if r.kind == kind
                  if (ratio := _ratio(r.gems_host_us, r.aten_host_us)) is not None]  # fmt: skip
        geomean = _geomean(ratios)
        if geomean is not None:
            summary[kind] = {"cases": len(ratios), "gems_over_aten_geomean": geomean,
                             "gems_over_aten_max": max(ratios)}  # fmt: skip
    return summary


def format_overhead_table(results: Sequence[Result], rivals: Sequence[Rival] = ()) -> str:
    """Host overhead per call on a tiny input, by case kind, for ATen, gems and each rival,
    with each one's ratio to ATen (the issue's target: gems at most 2x ATen)."""
    header = (
        f"{'kind':<10}{'op':<22}{'dtype':<10}{'aten us':>9}{'gems us':>9}"
        f"{'gems/aten':>11}"
        + "".join(_pair(r.name, f"{r.name} us", f"{r.name}/aten") for r in rivals)
    )
    lines = ["host overhead per call (tiny input, no synchronisation)", header, "-" * len(header)]
    measured = sorted((r for r in results if r.aten_host_us is not None),
                      key=lambda r: r.kind)  # fmt: skip
    for r in measured:
        ratio = _ratio(r.gems_host_us, r.aten_host_us)
        row = (
            f"{r.kind:<10}{r.op:<22}{r.dtype:<10}{_number(r.aten_host_us, 1):>9}"
            f"{_number(r.gems_host_us, 1):>9}{_number(ratio, 2):>11}"
        )
        for rival in rivals:
            host = outcome.host_us if (outcome := r.rivals.get(rival.name)) else None
            row += _pair(rival.name, _number(host, 1), _number(_ratio(host, r.aten_host_us), 2))
        lines.append(row)
    for kind, summary in host_overhead_by_kind(measured).items():
        lines.append(
            f"{kind}: gems/aten host overhead geometric mean "
            f"{summary['gems_over_aten_geomean']:.2f}, worst {summary['gems_over_aten_max']:.2f}"
            f" over {summary['cases']} cases"
        )
    return "\n".join(lines)


def write_json(results: Sequence[Result], path: Path, environment: dict[str, str],
               rivals: Sequence[Rival] = ()) -> None:  # fmt: skip
    """Results, host overhead by kind, the competitors and the environment, as JSON."""
    payload = {
        "environment": environment,
        "competitors": {rival.name: rival.note for rival in rivals},
        "host_overhead_by_kind": host_overhead_by_kind(results),
        "results": [asdict(r) for r in results],
    }
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


def main(
    cases_for: Callable[[bool], Sequence[Case]],
    name: str,
    argv: Sequence[str] | None = None,
    rivals_for: Callable[[Sequence[str] | None], Sequence[Rival]] | None = None,
) -> int:
    """Command line shared by the benchmark scripts: ``--smoke``, ``--json``, ``--deadline``,
    ``--only``, and ``--competitors`` when ``rivals_for`` loads competitors by name."""
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
    parser.add_argument(
        "--competitors",
        nargs="*",
        default=None,
        help="compare against only these libraries (none when given no names; default: all)",
    )
    args = parser.parse_args(argv)
    if not args.smoke and not torch.cuda.is_available():
        parser.error("no GPU: use --smoke (with TRITON_INTERPRET=1) on a CPU-only machine")
    cases = [c for c in cases_for(args.smoke) if args.only is None or c.op in args.only]
    rivals = list(rivals_for(args.competitors)) if rivals_for is not None else []
    if args.smoke:
        # The interpreter evaluates masked-out lanes too; their NaN warnings mean nothing.
        warnings.filterwarnings("ignore", category=RuntimeWarning)
    results, failures = run_cases(cases, args.smoke, args.deadline, rivals)
    print(format_table(results, rivals))
    print()
    print(format_overhead_table(results, rivals))
    out_dir = os.environ.get("OUT")
    target = args.json or (Path(out_dir) / f"{name}.json" if out_dir else None)
    if target is not None:
        write_json(results, target, environment(), rivals)
        print(f"wrote {target}")
    return 0 if results and not failures and all(r.matches for r in results) else 1
