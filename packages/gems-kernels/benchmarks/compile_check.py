"""Compile every kernel specialization the package launches for an H200 (sm_90), with no GPU.

    python packages/gems-kernels/benchmarks/compile_check.py            # every workload
    python packages/gems-kernels/benchmarks/compile_check.py --workload bench --cases softmax

Two phases:

1. Recording, in a child process under ``TRITON_INTERPRET=1``, with a hook on
   ``InterpretedFunction.run`` (every launch) that records the launch's
   specialization the way ``JITFunction.run`` would compute it for a CUDA target: each
   argument's Triton type (``*bf16`` for a bfloat16 tensor, ``i32``/``i64`` for ints, ``fp32``
   for floats), the divisibility-by-16 attribute and equal-to-1 constants (Triton's own
   ``native_specialize_impl`` with the CUDA backend), the constexpr values, num_warps and
   num_stages. Workloads: ``bench``, the benchmark smoke cases (``cases.core_cases(True)``,
   ``fused_cases(True)``; ATen ops through ``use_gems``); ``tests``, the package's test suite
   (its own test kernels are left out); ``bench-full``, the same cases at their standard GPU
   shapes, launches recorded but not run (the interpreter would take hours; block sizes that
   follow the row length only show up there). While recording, the op modules see the vendor
   as ``nvidia``, so they pick the GPU launch settings (``backends/tuning.py``, the attention and
   matmul blocks, no bfloat16 upcast); dispatch and the tensors stay on the CPU backend. Matrix
   product tuning launches every candidate once (``do_bench`` runs the launch instead of timing
   it), so every configuration a GPU could pick is recorded; tuning results go to a temporary
   cache.
2. Compiling, in a pool of two processes without ``TRITON_INTERPRET`` (so ``@triton.jit`` gives
   real ``JITFunction`` objects): ``triton.compile(ASTSource(...), target=GPUTarget("cuda", 90,
   32))`` down to cubin with the ptxas in Triton's wheel, then the kernel's shared memory is
   checked against sm_90's 227 KiB (Triton checks it only when loading on a device). Prints a
   row per kernel: specializations, compiled, failed, most shared memory and the first line of
   the first error; then the package's kernels that no workload launched. Exits 1 on any
   failure or a benchmark case that raised.

Results under the interpreter are not compared: the tests are written for the CPU settings, and
under the GPU ones the bfloat16 ``tl.dot`` tests fail (the interpreter multiplies bfloat16 tiles
wrongly, which the CPU settings avoid by upcasting); those failures are printed as a note.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import contextlib
import dataclasses
import importlib
import importlib.util
import inspect
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

BENCHMARKS = Path(__file__).resolve().parent
PACKAGE = BENCHMARKS.parent
# Options a launch passes next to the kernel's arguments; the rest are compile options we keep.
_LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")
_DEFAULT_OPTIONS = {"num_warps": 4, "num_stages": 3}
SM90 = ("cuda", 90, 32)
# Shared memory one block may use on sm_90 (227 KiB; the H100/H200 opt-in maximum).
SM90_SHARED_BYTES = 232448


@dataclasses.dataclass(frozen=True)
class KernelRef:
    """Where a kernel's Python function lives: a module attribute, or a generated pointwise
    module (its ``source``, kept because the cache dir it was written to may be gone by the time
    it compiles) whose ``_scalar_fn`` global is the element function ``scalar``."""

    module: str
    qualname: str
    source: str = ""
    scalar: KernelRef | None = None

    @property
    def in_package(self) -> bool:
        """Whether the kernel (for generated ones, the element function) is gems_kernels'."""
        return (self.scalar or self).module.startswith("gems_kernels.")

    @property
    def label(self) -> str:
        if self.scalar is not None:
            return f"pointwise[{self.scalar.qualname}]"
        return f"{self.module.removeprefix('gems_kernels.')}.{self.qualname}"


@dataclasses.dataclass(frozen=True)
class Specialization:
    """One compiled variant of a kernel, as ``JITFunction.run`` would key it on a CUDA GPU."""

    kernel: KernelRef
    signature: tuple[tuple[str, str], ...]  # (parameter, Triton type or "constexpr")
    constexprs: tuple[tuple[str, Any], ...]  # (parameter, encoded value)
    attrs: tuple[tuple[str, str], ...]  # (parameter, "D" = divisible by 16)
    options: tuple[tuple[str, int], ...]  # num_warps, num_stages, ...


_REFS: dict[Callable[..., Any], KernelRef] = {}


def kernel_ref(fn: Callable[..., Any]) -> KernelRef:
    """The reference of a Python kernel function (an interpreted kernel's ``.fn``)."""
    ref = _REFS.get(fn)
    if ref is None:
        module = fn.__module__
        if module.startswith("gems_kernels_generated_"):
            scalar = fn.__globals__["_scalar_fn"]
            ref = KernelRef(module, fn.__qualname__, Path(fn.__code__.co_filename).read_text(),
                            kernel_ref(getattr(scalar, "fn", scalar)))  # fmt: skip
        else:
            ref = KernelRef(module, fn.__qualname__)
        _REFS[fn] = ref
    return ref


def _encode(value: Any) -> Any:
    """A constexpr value, hashable: numbers, strings and None as is; dtypes and kernels as
    ``("dtype", name)`` and ``("fn", KernelRef)``."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if type(value).__name__ == "constexpr":
        return _encode(value.value)
    if hasattr(value, "primitive_bitwidth"):  # a triton.language dtype
        return ("dtype", value.name)
    fn = getattr(value, "fn", value)
    if callable(fn) and hasattr(fn, "__qualname__"):
        return ("fn", kernel_ref(fn))
    raise TypeError(f"constexpr value {value!r}: expected a number, str, None, dtype or kernel")


def _bind(
    interpreted: Any, args: Sequence[Any], kwargs: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, int]]:
    """A launch's arguments by parameter name (defaults applied) and its launch options."""
    kwargs = dict(kwargs)
    options = {name: kwargs.pop(name) for name in _LAUNCH_OPTIONS if name in kwargs}
    options = {**_DEFAULT_OPTIONS, **{k: v for k, v in options.items() if v is not None}}
    bound = inspect.signature(interpreted.fn).bind(*args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments), options


def grid_problem(interpreted: Any, args: Sequence[Any], kwargs: dict[str, Any], grid: Any) -> str:
    """Why CUDA would refuse this launch's grid (x < 2^31, y and z <= 65535), or ""."""
    size = tuple(grid(_bind(interpreted, args, kwargs)[0]) if callable(grid) else grid)
    x, y, z = (*size, 1, 1)[:3]
    if x < 2**31 and y <= 65535 and z <= 65535:
        return ""
    return f"{kernel_ref(interpreted.fn).label}: grid {(x, y, z)} over CUDA's limits"


def specialize(interpreted: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Specialization:
    """The CUDA specialization of one launch of ``interpreted`` (an ``InterpretedFunction``)."""
    from triton._C.libtriton import native_specialize_impl  # type: ignore[import-untyped]
    from triton.runtime.jit import _normalize_ty  # type: ignore[import-untyped]

    arguments, options = _bind(interpreted, args, kwargs)
    fn = interpreted.fn
    annotations = {k: _normalize_ty(v) for k, v in inspect.get_annotations(fn).items()}
    unspecialized = set(interpreted.kwargs.get("do_not_specialize") or ())
    unaligned = set(interpreted.kwargs.get("do_not_specialize_on_alignment") or ())
    backend = _cuda_backend()
    signature, constexprs, attrs = [], [], []
    for index, (name, value) in enumerate(arguments.items()):
        annotation = annotations.get(name)
        if annotation == "constexpr":
            signature.append((name, "constexpr"))
            constexprs.append((name, _encode(value)))
            continue
        kind, attr = native_specialize_impl(
            backend, value, False,
            not ({index, name} & unspecialized), not ({index, name} & unaligned),
        )  # fmt: skip
        if annotation and kind != "constexpr":
            # An annotated parameter keeps its type; floats and bools are not specialised.
            kind, attr = annotation, None if annotation[:2] in ("fp", "bf", "u1") else attr
        signature.append((name, kind))
        if kind == "constexpr":  # ints equal to 1 and None become constants
            constexprs.append((name, _encode(value)))
        elif attr:
            attrs.append((name, attr))
    return Specialization(kernel_ref(fn), tuple(signature), tuple(constexprs), tuple(attrs),
                          tuple(sorted(options.items())))  # fmt: skip


_BACKEND: list[Any] = []


def _cuda_backend() -> Any:
    """Triton's CUDA backend for sm_90 (no driver needed)."""
    if not _BACKEND:
        from triton.backends.compiler import GPUTarget  # type: ignore[import-untyped]
        from triton.compiler import make_backend  # type: ignore[import-untyped]

        _BACKEND.append(make_backend(GPUTarget(*SM90)))
    return _BACKEND[0]


class Recorder:
    """Counts the specializations of every interpreted kernel launch while installed; with
    ``execute`` false the launches are recorded but not run (their outputs stay unwritten)."""

    def __init__(self, execute: bool = True) -> None:
        self.launches: collections.Counter[Specialization] = collections.Counter()
        self.execute = execute
        self.grid_problems: set[str] = set()

    @contextlib.contextmanager
    def installed(self) -> Iterator[Recorder]:
        """Hook ``InterpretedFunction.run`` (every launch under the interpreter)."""
        from triton.runtime.interpreter import InterpretedFunction  # type: ignore[import-untyped]

        original = InterpretedFunction.run
        recorder = self

        def run(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
            if not warmup:
                recorder.launches[specialize(self, args, kwargs)] += 1
                problem = grid_problem(self, args, kwargs, grid)
                if problem:
                    recorder.grid_problems.add(problem)
                if not recorder.execute:
                    return None
            return original(self, *args, grid=grid, warmup=warmup, **kwargs)

        InterpretedFunction.run = run
        try:
            yield self
        finally:
            InterpretedFunction.run = original


@contextlib.contextmanager
def gpu_settings(vendor: str = "nvidia") -> Iterator[None]:
    """The op modules pick ``vendor``'s launch settings; dispatch stays on the CPU backend.

    Matrix-product tuning launches each candidate once (``do_bench`` runs it instead of timing
    it) under a device name of the emulated vendor.
    """
    import gems_kernels  # noqa: F401  (imports every op module)
    import torch
    import triton.testing  # type: ignore[import-untyped]
    from gems_kernels.backends import VENDORS

    emulated = dataclasses.replace(VENDORS["cpu"], name=vendor)
    patched = [
        module for name, module in list(sys.modules.items())
        if name.startswith(("gems_kernels.ops", "gems_kernels.fused", "gems_kernels.pointwise"))
        and hasattr(module, "current_vendor")
    ]  # fmt: skip
    saved = [(module, getattr(module, "current_vendor")) for module in patched]  # noqa: B009
    saved_bench, saved_name = triton.testing.do_bench, torch.cuda.get_device_name
    for module in patched:
        setattr(module, "current_vendor", lambda: emulated)  # noqa: B010
    triton.testing.do_bench = lambda fn, *args, **kwargs: (fn(), 1.0)[1]
    torch.cuda.get_device_name = lambda *args: f"{vendor} (emulated)"
    try:
        yield
    finally:
        for module, original in saved:
            setattr(module, "current_vendor", original)  # noqa: B010
        triton.testing.do_bench, torch.cuda.get_device_name = saved_bench, saved_name


def run_bench_cases(ops: Sequence[str], smoke: bool) -> list[str]:
    """Run the benchmark cases' gems calls once each (those of ``ops`` if given; ``smoke``: at
    the tiny shapes, else at the standard GPU shapes); a line per case that raised."""
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    import gems_kernels
    from cases import core_cases, fused_cases

    problems = []
    for case in [*core_cases(smoke), *fused_cases(smoke)]:
        if ops and case.op not in ops:
            continue
        inputs = case.make_inputs(case.shape, case.dtype)
        context = (gems_kernels.use_gems(include=case.overloads) if case.gems is None
                   else contextlib.nullcontext())  # fmt: skip
        try:
            with context:
                (case.gems or case.aten)(*inputs)
        except Exception as error:  # report every failing case, keep recording the others
            problems.append(f"case {case.op} {case.dtype}: {_first_line(error)}")
    return problems


def run_tests(pytest_args: Sequence[str]) -> list[str]:
    """Run the package's tests in this process; a note if any failed. They are written for the
    CPU settings: under the GPU ones the bfloat16 ``tl.dot`` tests fail (the interpreter
    multiplies bfloat16 tiles wrongly, which the CPU settings avoid by upcasting), so failures
    are reported but do not fail the sweep."""
    import pytest

    config = PACKAGE.parents[1] / "pytest.ini"
    own = PACKAGE / "tests" / "benchmarks" / "test_compile_check.py"  # it installs the hook itself
    code = pytest.main(["-q", "-p", "no:cacheprovider", "-c", str(config),
                        "--rootdir", str(config.parent), f"--ignore={own}",
                        *(pytest_args or [str(PACKAGE / "tests")])])  # fmt: skip
    if code == 0:
        return []
    return [f"tests under GPU settings: pytest exit status {int(code)} (see its summary above)"]


def record(
    workloads: Sequence[str], cases: Sequence[str], pytest_args: Sequence[str], vendor: str
) -> tuple[list[Specialization], list[str], list[str]]:
    """Run the workloads under the interpreter with the recorder installed: the package's
    specializations (the tests' own kernels are left out), the cases that raised, and notes."""
    if os.environ.get("TRITON_INTERPRET") != "1":
        raise RuntimeError("record: TRITON_INTERPRET=1 must be set before triton is imported")
    recorder = Recorder()
    problems: list[str] = []
    notes: list[str] = []
    with recorder.installed(), gpu_settings(vendor):
        if "bench" in workloads:
            problems += run_bench_cases(cases, smoke=True)
        if "tests" in workloads:
            notes += run_tests(pytest_args)
        if "bench-full" in workloads:
            # The interpreter would take hours at these shapes: record only (no kernel runs).
            recorder.execute = False
            problems += run_bench_cases(cases, smoke=False)
            recorder.execute = True
    problems += sorted(recorder.grid_problems)
    specs = [s for s in recorder.launches if s.kernel.in_package]
    missed = never_launched(specs)
    if missed and not cases:
        notes.append(f"never launched by the workloads, so not compiled: {', '.join(missed)}")
    return specs, problems, notes


def never_launched(specs: Sequence[Specialization]) -> list[str]:
    """Labels of the package's kernels that no spec covers: ``@pointwise_dynamic`` operators
    and ``@triton.jit`` functions that read ``tl.program_id`` (device helpers do not)."""
    from gems_kernels.pointwise.dynamic import PointwiseOp
    from triton.runtime.interpreter import InterpretedFunction  # type: ignore[import-untyped]

    launched = {s.kernel.scalar or s.kernel for s in specs}
    candidates = {}
    for name, module in list(sys.modules.items()):
        if not name.startswith("gems_kernels."):
            continue
        for value in vars(module).values():
            if isinstance(value, PointwiseOp):
                ref = kernel_ref(value.scalar_fn.fn)
                candidates[ref] = f"pointwise[{ref.qualname}]"
            elif isinstance(value, InterpretedFunction) and "tl.program_id" in inspect.getsource(
                value.fn
            ):
                ref = kernel_ref(value.fn)
                candidates[ref] = ref.label
    return sorted(label for ref, label in candidates.items() if ref not in launched)


def _first_line(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    lines = [line for line in text.splitlines() if line.strip()]
    # Triton's compile errors start with the source location; the message is the last line.
    return f"{type(error).__name__}: {lines[-1] if lines else text}"[:200]


def _to_json(spec: Specialization) -> dict[str, Any]:
    return dataclasses.asdict(spec)


def _ref_from_json(data: dict[str, Any]) -> KernelRef:
    scalar = data.get("scalar")
    return KernelRef(data["module"], data["qualname"], data.get("source", ""),
                     _ref_from_json(scalar) if scalar else None)  # fmt: skip


def _from_json(data: dict[str, Any]) -> Specialization:
    def pairs(items: list[list[Any]]) -> tuple[tuple[Any, ...], ...]:
        return tuple((k, _constant_from_json(v)) for k, v in items)

    return Specialization(_ref_from_json(data["kernel"]), pairs(data["signature"]),
                          pairs(data["constexprs"]), pairs(data["attrs"]),
                          pairs(data["options"]))  # fmt: skip


def _constant_from_json(value: Any) -> Any:
    if isinstance(value, list):  # an encoded dtype or kernel
        tag, payload = value
        return (tag, _ref_from_json(payload) if tag == "fn" else payload)
    return value


def resolve(ref: KernelRef) -> Any:
    """The ``JITFunction`` ``ref`` names, imported in this (non-interpreting) process."""
    if ref.scalar is not None:
        # Triton reads a kernel's source through its file, so the generated one gets a file.
        path = _GENERATED[0] / str(os.getpid()) / f"{ref.module}.py"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(ref.source)
        spec = importlib.util.spec_from_file_location(ref.module, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load generated kernel {ref.module}")
        module = importlib.util.module_from_spec(spec)
        module.__dict__["_scalar_fn"] = resolve(ref.scalar)
        spec.loader.exec_module(module)
        return getattr(module, ref.qualname)
    value: Any = importlib.import_module(ref.module)
    for part in ref.qualname.split("."):
        value = getattr(value, part)
    return getattr(value, "scalar_fn", value)  # a @pointwise_dynamic op's element function


def _decode(value: Any) -> Any:
    """A constexpr value for ``ASTSource`` from its encoding."""
    if isinstance(value, tuple):
        tag, payload = value
        if tag == "dtype":
            import triton.language as tl  # type: ignore[import-untyped]

            return tl.dtype(payload)
        return resolve(payload)
    return value


def compile_one(spec: Specialization) -> tuple[str, int]:
    """Compile ``spec`` for sm_90 down to cubin: ("", shared memory bytes) when it compiled and
    fits sm_90's shared memory, else (the first error line, bytes or 0)."""
    import triton  # type: ignore[import-untyped]
    from triton.backends.compiler import GPUTarget  # type: ignore[import-untyped]
    from triton.compiler import ASTSource  # type: ignore[import-untyped]

    try:
        fn = resolve(spec.kernel)
        constexprs = {name: _decode(value) for name, value in spec.constexprs}
        attrs = {(fn.arg_names.index(name),): _cuda_backend().parse_attr(attr)
                 for name, attr in spec.attrs}  # fmt: skip
        compiled = triton.compile(ASTSource(fn, dict(spec.signature), constexprs, attrs),
                                  target=GPUTarget(*SM90), options=dict(spec.options))  # fmt: skip
    except Exception as error:  # every failure is reported, not just the first
        return _first_line(error), 0
    shared = int(compiled.metadata.shared)
    if not compiled.asm.get("cubin"):
        return "no cubin produced", shared
    if shared > SM90_SHARED_BYTES:
        # Triton checks this only when loading the kernel on a device (OutOfResources).
        return f"shared memory {shared} bytes > sm_90's {SM90_SHARED_BYTES}", shared
    return "", shared


# Where a compiling process writes generated kernels' sources (one folder per process).
_GENERATED: list[Path] = [Path(tempfile.gettempdir())]


def _worker_init(scratch: Path) -> None:
    sys.path.insert(0, str(PACKAGE / "src"))
    _GENERATED[0] = scratch


def compile_all(
    specs: Sequence[Specialization], workers: int, scratch: Path
) -> list[tuple[str, int]]:
    """Compile each of ``specs`` in ``workers`` fresh processes (no ``TRITON_INTERPRET``),
    generated kernels' sources written under ``scratch``."""
    if os.environ.get("TRITON_INTERPRET"):
        raise RuntimeError("compile_all: TRITON_INTERPRET must not be set (kernels would be "
                           "interpreted functions, which triton.compile cannot build)")  # fmt: skip
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(workers, context, _worker_init,
                                                (scratch,)) as pool:  # fmt: skip
        return list(pool.map(compile_one, specs, chunksize=1))


def summary(
    specs: Sequence[Specialization], outcomes: Sequence[tuple[str, int]]
) -> list[tuple[str, ...]]:
    """Rows (kernel, specializations, compiled, failed, most shared memory in KiB, first error)
    sorted by kernel."""
    rows: dict[str, list[Any]] = {}
    for spec, (error, shared) in zip(specs, outcomes, strict=True):
        row = rows.setdefault(spec.kernel.label, [0, 0, 0, 0, ""])
        row[0] += 1
        row[1 if not error else 2] += 1
        row[3] = max(row[3], shared)
        row[4] = row[4] or error
    return [(name, *map(str, row[:3]), f"{row[3] / 1024:.1f}", row[4])
            for name, row in sorted(rows.items())]  # fmt: skip


def _print_table(rows: Sequence[tuple[str, ...]]) -> None:
    header = ("kernel", "specs", "ok", "failed", "smem KiB", "first error")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(5)]
    for row in [header, *rows]:
        print("  ".join(cell.ljust(w) for cell, w in zip(row[:5], widths, strict=True)),
              row[5], sep="  ")  # fmt: skip


def _record_in_child(args: argparse.Namespace, path: Path) -> dict[str, Any]:
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": os.pathsep.join(
        [str(PACKAGE / "src"), os.environ.get("PYTHONPATH", "")])}  # fmt: skip
    # A fresh cache: a stored matmul tuning choice would skip launching the other candidates.
    env["GEMS_CACHE_DIR"] = str(path.parent / "gems_cache")
    command = [sys.executable, __file__, "--record-to", str(path), "--vendor", args.vendor,
               "--workload", *args.workload, *(["--cases", *args.cases] if args.cases else []),
               *(["--pytest-args", *args.pytest_args] if args.pytest_args else [])]  # fmt: skip
    result = subprocess.run(command, env=env, check=False)
    if result.returncode != 0 or not path.exists():
        raise RuntimeError(f"recording failed with exit status {result.returncode}")
    recorded: dict[str, Any] = json.loads(path.read_text())
    return recorded


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", nargs="+", choices=("bench", "tests", "bench-full"),
                        default=["bench", "tests", "bench-full"],
                        help="bench: smoke cases; tests: the package's tests; bench-full: "
                             "the cases at GPU shapes, launches recorded but not run")  # fmt: skip
    parser.add_argument("--only", nargs="+", default=[],
                        help="compile only kernels whose label contains one of these")  # fmt: skip
    parser.add_argument("--cases", nargs="+", default=[],
                        help="run only the benchmark cases of these ops")  # fmt: skip
    parser.add_argument("--limit", type=int, default=0, help="compile at most N specializations")
    parser.add_argument("--workers", type=int, default=2, choices=(1, 2))
    parser.add_argument("--vendor", default="nvidia", help="launch settings to record")
    parser.add_argument("--pytest-args", nargs="+", default=[],
                        help="test paths for the tests workload")  # fmt: skip
    parser.add_argument("--record-to", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.record_to:  # the recording child
        specs, problems, notes = record(args.workload, args.cases, args.pytest_args, args.vendor)
        output = {"specs": [_to_json(s) for s in specs], "problems": problems, "notes": notes}
        args.record_to.write_text(json.dumps(output))
        return 0

    started = time.monotonic()
    os.environ.pop("TRITON_INTERPRET", None)
    with tempfile.TemporaryDirectory(prefix="gems_compile_check_") as scratch:
        path = Path(scratch) / "specs.json"
        recorded = _record_in_child(args, path)
        specs = [_from_json(s) for s in recorded["specs"]]
        recording_s = time.monotonic() - started
        if args.only:
            specs = [s for s in specs if any(o in s.kernel.label for o in args.only)]
        if args.limit:
            specs = specs[: args.limit]
        os.environ.setdefault("TRITON_CACHE_DIR", str(Path(scratch) / "triton_cache"))
        outcomes = compile_all(specs, args.workers, Path(scratch) / "generated")
    rows = summary(specs, outcomes)
    _print_table(rows)
    failed = sum(1 for error, _ in outcomes if error)
    print(f"\n{len(rows)} kernels, {len(specs)} specializations for sm_90: "
          f"{len(specs) - failed} compiled, {failed} failed; recording {recording_s:.0f} s, "
          f"total {time.monotonic() - started:.0f} s")  # fmt: skip
    for note in recorded["notes"]:
        print(f"note: {note}")
    for problem in recorded["problems"]:
        print(f"workload: {problem}")
    return 1 if failed or recorded["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
