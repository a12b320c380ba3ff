"""One model's bfloat16 step op by op: every ATen call of the step (forward, loss, backward) is
recorded on ATen with its bf16 inputs, then replayed alone three times on those same inputs: in
float64 (bf16 and float32 tensors upcast: the reference), on ATen in bf16 and under
``use_gems()`` in bf16. Each op's error is then its own, not what earlier ops passed on, which is
what tells a kernel's accuracy gap from the way rounding errors travel through a model.

Per call site (the k-th call of an overload, each floating output) and aggregated over the seeds:
the largest error relative to the reference's largest magnitude (median over seeds), the mean
error in bf16 ulps of the reference, and the share of elements that differ from the correctly
rounded reference (the bf16 value nearest to it), for gems and for ATen. Only the call sites
where one side is not correctly rounded everywhere are printed, unless ``--all``.

    TRITON_INTERPRET=1 python packages/gems-kernels/benchmarks/op_errors.py --model vit-hf
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gems_kernels
import torch
from gems_kernels.coverage import METADATA_OPS, overload_name
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

sys.path.insert(0, str(Path(__file__).resolve().parent))
import real_models

__all__ = [
    "Call",
    "OpError",
    "Recorder",
    "SiteError",
    "errors",
    "format_table",
    "main",
    "measure",
    "replay",
]

_ULP_BITS = 7
"""bfloat16's explicit mantissa bits."""
_SCALE_FLOOR = 2.0**-24
"""Elements below this share of the reference's largest are measured in ulps at that level: a
result that cancels to zero in exact arithmetic is not counted as infinitely wrong."""


@dataclass(frozen=True)
class Call:
    """One recorded ATen call: where it sits in the step, and its inputs as they were."""

    site: str
    """``overload#k``: the k-th call of that overload in the step."""
    func: torch._ops.OpOverload
    args: tuple[Any, ...]
    kwargs: dict[str, Any]


class Recorder(TorchDispatchMode):
    """Records every computing call that returns a bfloat16 tensor, with copies of its inputs
    (in-place ops change them afterwards)."""

    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]  # mypy skips the exclude for super()
        self.calls: list[Call] = []
        self._counts: Counter[str] = Counter()

    def __torch_dispatch__(
        self,
        func: torch._ops.OpOverload,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        copies = _cloned((args, kwargs))
        result = func(*args, **kwargs)
        name = overload_name(func)
        if not func.is_view and name not in METADATA_OPS and _bf16_outputs(result):
            self._counts[name] += 1
            self.calls.append(Call(f"{name}#{self._counts[name]}", func, *copies))
        return result


def _cloned(tree: Any) -> Any:
    return tree_map(lambda t: t.clone() if isinstance(t, torch.Tensor) else t, tree)


def _upcast(tree: Any) -> Any:
    return tree_map(
        lambda t: (
            t.double()
            if isinstance(t, torch.Tensor) and t.dtype in (torch.bfloat16, torch.float32)
            else t
        ),
        tree,
    )


def _tensors(result: Any) -> list[torch.Tensor]:
    return [t for t in tree_flatten(result)[0] if isinstance(t, torch.Tensor)]


def _bf16_outputs(result: Any) -> bool:
    return any(t.dtype == torch.bfloat16 for t in _tensors(result))


@dataclass(frozen=True)
class OpError:
    """One output of one call against float64: largest error relative to the reference's
    largest magnitude, mean error in bf16 ulps, share of elements not correctly rounded."""

    relative: float
    ulps: float
    misrounded: float


def errors(got: torch.Tensor, reference: torch.Tensor) -> OpError:
    """``got`` (bfloat16) against the float64 ``reference``."""
    error = (got.double() - reference).abs()
    largest = float(reference.abs().max())
    magnitude = reference.abs().clamp_min(max(largest * _SCALE_FLOOR, 2.0**-126))
    ulp = torch.exp2(torch.floor(torch.log2(magnitude)) - _ULP_BITS)
    return OpError(
        relative=float(error.max()) / largest if largest else float(error.max()),
        ulps=float((error / ulp).mean()),
        misrounded=float((got != reference.to(torch.bfloat16)).double().mean()),
    )


def replay(call: Call) -> Iterator[tuple[int, tuple[int, ...], OpError, OpError]]:
    """(output index, its shape, gems' error, ATen's error) for each bfloat16 output of ``call``
    whose float64 replay gives a float64 tensor; nothing when the float64 replay fails."""
    try:
        reference = call.func(*_upcast(_cloned(call.args)), **_upcast(_cloned(call.kwargs)))
    except RuntimeError as error:
        print(f"{call.site}: no float64 reference ({error})", file=sys.stderr)
        return
    aten = call.func(*_cloned(call.args), **_cloned(call.kwargs))
    with gems_kernels.use_gems():
        gems = call.func(*_cloned(call.args), **_cloned(call.kwargs))
    outputs = zip(_tensors(reference), _tensors(aten), _tensors(gems), strict=True)
    for index, (expected, on_aten, on_gems) in enumerate(outputs):
        if expected.dtype == torch.float64 and on_aten.dtype == torch.bfloat16 and expected.numel():
            yield index, tuple(expected.shape), errors(on_gems, expected), errors(on_aten, expected)


@dataclass(frozen=True)
class SiteError:
    """One call site's output over the seeds: (gems, ATen) per seed."""

    site: str
    output: int
    shape: tuple[int, ...]
    runs: tuple[tuple[OpError, OpError], ...]

    def is_exact(self) -> bool:
        """Whether both sides rounded every element correctly at every seed."""
        return all(g.misrounded == a.misrounded == 0 for g, a in self.runs)


def _record(model: str, seed: int) -> list[Call]:
    torch.manual_seed(seed)
    case = real_models.model_zoo.build(model).to(torch.bfloat16)
    recorder = Recorder()
    with recorder:
        real_models.run_step(case)
    return recorder.calls


def measure(model: str, seeds: Sequence[int]) -> list[SiteError]:
    """Every call site of ``model``'s bf16 step, replayed at each seed."""
    runs: dict[tuple[str, int], list[tuple[OpError, OpError]]] = {}
    shapes: dict[tuple[str, int], tuple[int, ...]] = {}
    for seed in seeds:
        for call in _record(model, seed):
            for index, shape, on_gems, on_aten in replay(call):
                runs.setdefault((call.site, index), []).append((on_gems, on_aten))
                shapes[(call.site, index)] = shape
    return [
        SiteError(site, index, shapes[(site, index)], tuple(pairs))
        for (site, index), pairs in runs.items()
    ]


def format_table(sites: Sequence[SiteError]) -> Iterator[str]:
    """A Markdown table: per call site, gems against ATen."""
    yield ("| call | output | shape | seeds | relative max gems | ATen | mean ulps gems | ATen "
           "| not nearest gems | ATen |")  # fmt: skip
    yield "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    for s in sites:
        gems = [g for g, _ in s.runs]
        aten = [a for _, a in s.runs]
        yield (
            f"| {s.site} | {s.output} | {list(s.shape)} | {len(s.runs)} "
            f"| {statistics.median(e.relative for e in gems):.2e} "
            f"| {statistics.median(e.relative for e in aten):.2e} "
            f"| {statistics.mean(e.ulps for e in gems):.3f} "
            f"| {statistics.mean(e.ulps for e in aten):.3f} "
            f"| {statistics.mean(e.misrounded for e in gems):.2%} "
            f"| {statistics.mean(e.misrounded for e in aten):.2%} |"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=sorted(real_models.MODELS), default="vit-hf")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    parser.add_argument("--all", action="store_true", help="also the correctly rounded sites")
    args = parser.parse_args(argv)
    sites = measure(args.model, args.seeds)
    shown = [s for s in sites if args.all or not s.is_exact()]
    print("\n".join(format_table(shown)))
    exact = sum(s.is_exact() for s in sites)
    print(f"\n{exact} of {len(sites)} call-site outputs correctly rounded by both at every seed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
