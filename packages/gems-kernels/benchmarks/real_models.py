"""Real model code on gems: the twenty architectures of ``model_zoo`` (Hugging Face models
built from small configs with random weights, a diffusers U-Net, the ``torch.nn`` vision blocks).

Per model, dtype and seed, one forward with its loss and one backward, three times on the same
weights and inputs: in float64 (the reference), on ATen and under ``use_gems()``. The weights and
inputs are drawn once per seed, rounded to the dtype, and the float64 run takes those rounded
values, so every error below is the arithmetic's own. The gems run also takes one AdamW step
(foreach, as on GPUs), so that its trace holds the whole training step. Printed per model and
seed: the ATen overloads that ran on gems and those left to ATen (``NativeOpTrace`` of the gems
run: native calls, and calls that a gems kernel's host code made on ATen), and for the logits and
the gradients the largest error relative to the reference's largest magnitude (gradients: over
all parameters, relative to the model's largest gradient), for gems and for ATen, and their
ratio. Then per model the verdict over the seeds (the issue's bfloat16 target: gems / ATen <= 1.1)
on the median of the per-seed ratios and its interval (see :func:`summarize` and
:meth:`Summary.verdict`).

    TRITON_INTERPRET=1 python packages/gems-kernels/benchmarks/real_models.py
    TRITON_INTERPRET=1 python packages/gems-kernels/benchmarks/real_models.py --models vit-hf vit
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import gems_kernels
import torch
from gems_kernels.coverage import NativeOpTrace

sys.path.insert(0, str(Path(__file__).resolve().parent))
import model_zoo

__all__ = [
    "MODELS",
    "SEEDS",
    "ModelError",
    "Summary",
    "compare",
    "format_summary",
    "format_table",
    "main",
    "median_interval",
    "run",
    "run_step",
    "summarize",
]

SEEDS: Final = tuple(range(20))
MODELS: Final = model_zoo.MODELS


@dataclass(frozen=True)
class ModelError:
    """One model in one dtype and one seed: errors against float64, and what the gems run left
    on ATen."""

    model: str
    dtype: str
    seed: int
    gems_logits: float
    aten_logits: float
    gems_grads: float
    aten_grads: float
    gems_ops: int
    native_ops: tuple[str, ...]
    """Overloads left to ATen: native calls, and ATen calls of gems kernels' host code."""
    seconds: float
    gems_vs_aten_logits: float = 0.0
    """gems' logits against ATen's in the same dtype (relative to the reference's largest)."""
    gems_vs_aten_grads: float = 0.0
    step_ops: tuple[str, ...] = ()
    """Every computing overload the gems run called: on gems, left to ATen, or composite."""


def run_step(case: model_zoo.Case) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """One forward, loss and backward of ``case``: its logits and its parameters' gradients."""
    loss, logits = case.loss(case.model, case.inputs)
    loss.backward()
    grads = {name: p.grad for name, p in case.model.named_parameters() if p.grad is not None}
    return logits.detach(), grads


def _error(got: torch.Tensor, expected: torch.Tensor, scale: float) -> float:
    return float((got.double() - expected.double()).abs().max()) / scale


def _worst(got: dict[str, torch.Tensor], expected: dict[str, torch.Tensor], scale: float) -> float:
    return max(_error(got[key], value, scale) for key, value in expected.items())


def compare(
    name: str, dtype: torch.dtype, seed: int = 0, size: model_zoo.Size = model_zoo.TINY
) -> ModelError:
    """Errors of gems and of ATen in ``dtype`` against float64 on one model."""
    torch.manual_seed(seed)
    rounded = model_zoo.build(name, size).to(
        dtype
    )  # built outside gems, as ATen would initialise it
    reference_logits, reference = run_step(rounded.to(torch.float64))
    aten_logits, aten = run_step(rounded.to(dtype))
    started = time.perf_counter()
    on_gems = rounded.to(dtype)
    optimizer = torch.optim.AdamW(on_gems.model.parameters(), lr=1e-3, foreach=True)
    with gems_kernels.use_gems(), NativeOpTrace() as trace:
        gems_logits, gems = run_step(on_gems)
        optimizer.step()  # the gradients are kept: AdamW changes the parameters only
    seconds = time.perf_counter() - started
    logit_scale = float(reference_logits.abs().max())
    grad_scale = max(float(g.abs().max()) for g in reference.values())
    return ModelError(
        model=name,
        dtype=str(dtype).removeprefix("torch."),
        seed=seed,
        gems_logits=_error(gems_logits, reference_logits, logit_scale),
        aten_logits=_error(aten_logits, reference_logits, logit_scale),
        gems_grads=_worst(gems, reference, grad_scale),
        aten_grads=_worst(aten, reference, grad_scale),
        gems_ops=len(trace.gems),
        native_ops=tuple(sorted(set(trace.native) | set(trace.host))),
        seconds=seconds,
        gems_vs_aten_logits=_error(gems_logits, aten_logits, logit_scale),
        gems_vs_aten_grads=_worst(gems, aten, grad_scale),
        step_ops=tuple(sorted({*trace.gems, *trace.native, *trace.host, *trace.composite})),
    )


@dataclass(frozen=True)
class Summary:
    """One model in one dtype over its seeds: the median of each side's per-seed errors, and
    the median of the per-seed gems / ATen ratios with its interval (:func:`median_interval`)."""

    model: str
    dtype: str
    seeds: int
    gems_logits: float
    aten_logits: float
    gems_grads: float
    aten_grads: float
    logits_ratios: tuple[float, float, float]
    grads_ratios: tuple[float, float, float]
    """Median, and the low and high ends of its interval."""

    def verdict(self, target: float) -> str:
        """``met`` when both median ratios are at most ``target``; ``not met`` when a median
        over it has its whole interval over it too (the seeds show the gap); otherwise ``within
        noise`` (a median over it whose interval reaches down to it)."""
        over = [r for r in (self.logits_ratios, self.grads_ratios) if r[0] > target]
        if not over:
            return "met"
        return "not met" if any(low > target for _, low, _ in over) else "within noise"


def _quotient(gems: float, aten: float) -> float:
    """gems / ATen, where two exact results (0 / 0) count as a ratio of 1."""
    if aten == 0:
        return 1.0 if gems == 0 else math.inf
    return gems / aten


def _coverage(order: int, count: int) -> float:
    """How often the ``order``-th smallest and ``order``-th largest of ``count`` independent
    draws enclose their distribution's median: 1 - 2 P(Binomial(count, 1/2) < order)."""
    return 1 - 2 * sum(math.comb(count, i) for i in range(order)) / (1 << count)


def median_interval(values: Sequence[float], confidence: float = 0.9) -> tuple[float, float]:
    """A distribution-free interval for the median of the distribution ``values`` were drawn
    from (the sign test's): the k-th smallest to the k-th largest value, with the largest k whose
    coverage is at least ``confidence``, or the whole range when none is (up to 4 values at
    0.9). 5 seeds: the whole range (94%); 10 seeds: 2nd to 9th (98%); 20 seeds: 6th to 15th
    (96%)."""
    ordered = sorted(values)
    order = 1
    while order < len(ordered) // 2 and _coverage(order + 1, len(ordered)) >= confidence:
        order += 1
    return ordered[order - 1], ordered[-order]


def _spread(ratios: list[float]) -> tuple[float, float, float]:
    return (statistics.median(ratios), *median_interval(ratios))


def summarize(rows: Sequence[ModelError]) -> list[Summary]:
    """Per (model, dtype), in the order of ``rows``: the verdict's aggregate is the median over
    the seeds of the paired per-seed ratios gems / ATen.

    Why: each error is one element's maximum (20 logits for the classifiers), so one seed's ratio
    moves by tens of percent either way (0.6x to 1.6x on the HF ViT, whose long-run ratio is
    1.0). Paired, a seed where both sides err alike counts as 1 whatever its size; the median
    then ignores the seeds whose ATen maximum happens to be small (the ratio's heavy tail), and in
    many seeds both sides' largest error is the same element (a ratio of exactly 1). Drawing 5-,
    10- and 20-seed subsets of 100 seeds of the HF ViT, the chance that its logits' aggregate
    landed over 1.1 was 0.22, 0.13 and 0.04 for this median, 0.27, 0.20 and 0.10 for the geometric
    mean of the ratios, 0.30, 0.23 and 0.11 for the ratio of each side's median. Even 20 seeds do
    not settle 1.1x (seeds 0-19 put that median at 1.16, the next four blocks of 20 at 0.87 to
    1.01, all 100 at 1.00), so the verdict also weighs the median's interval
    (:func:`median_interval`, :meth:`Summary.verdict`)."""
    groups: dict[tuple[str, str], list[ModelError]] = {}
    for row in rows:
        groups.setdefault((row.model, row.dtype), []).append(row)
    return [
        Summary(
            model=model,
            dtype=dtype,
            seeds=len(runs),
            gems_logits=statistics.median(r.gems_logits for r in runs),
            aten_logits=statistics.median(r.aten_logits for r in runs),
            gems_grads=statistics.median(r.gems_grads for r in runs),
            aten_grads=statistics.median(r.aten_grads for r in runs),
            logits_ratios=_spread([_quotient(r.gems_logits, r.aten_logits) for r in runs]),
            grads_ratios=_spread([_quotient(r.gems_grads, r.aten_grads) for r in runs]),
        )
        for (model, dtype), runs in groups.items()
    ]


def _ratio(gems: float, aten: float) -> str:
    return "-" if aten == 0 else f"{gems / aten:.2f}"


def format_table(rows: Sequence[ModelError]) -> Iterator[str]:
    """A Markdown table of ``rows``, one line per model, dtype and seed."""
    yield ("| model | dtype | seed | ops on gems | native ops | logits gems | logits ATen | ratio "
           "| grads gems | grads ATen | ratio | gems run s |")  # fmt: skip
    yield "| --- | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    for r in rows:
        native = ", ".join(r.native_ops) or "none"
        yield (
            f"| {r.model} | {r.dtype} | {r.seed} | {r.gems_ops} | {native} | {r.gems_logits:.2e} "
            f"| {r.aten_logits:.2e} | {_ratio(r.gems_logits, r.aten_logits)} "
            f"| {r.gems_grads:.2e} | {r.aten_grads:.2e} | {_ratio(r.gems_grads, r.aten_grads)} "
            f"| {r.seconds:.0f} |"
        )


def format_summary(summaries: Sequence[Summary], target: float) -> Iterator[str]:
    """A Markdown table of ``summaries``: each side's median error over the seeds, the median of
    the per-seed ratios and its interval, and the verdict against ``target``."""
    yield ("| model | dtype | seeds | logits gems | logits ATen | median ratio | interval "
           "| grads gems | grads ATen | median ratio | interval | verdict |")  # fmt: skip
    yield "| --- | --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | --- | --- |"
    for s in summaries:
        logits, grads = s.logits_ratios, s.grads_ratios
        yield (
            f"| {s.model} | {s.dtype} | {s.seeds} | {s.gems_logits:.2e} | {s.aten_logits:.2e} "
            f"| {logits[0]:.2f} | {logits[1]:.2f} - {logits[2]:.2f} "
            f"| {s.gems_grads:.2e} | {s.aten_grads:.2e} "
            f"| {grads[0]:.2f} | {grads[1]:.2f} - {grads[2]:.2f} | {s.verdict(target)} |"
        )


def run(models: Sequence[str], dtypes: Sequence[str], seeds: Sequence[int]) -> list[ModelError]:
    """:func:`compare` for every model, dtype and seed, each row printed to stderr as it ends."""
    rows = []
    for dtype in dtypes:
        for name in models:
            for seed in seeds:
                row = compare(name, getattr(torch, dtype), seed)
                rows.append(row)
                print(
                    f"{name} {dtype} seed {seed}: logits {row.gems_logits:.2e} gems, "
                    f"{row.aten_logits:.2e} ATen; grads {row.gems_grads:.2e} gems, "
                    f"{row.aten_grads:.2e} ATen; left to ATen: {', '.join(row.native_ops) or '-'}"
                    f"; {row.seconds:.0f} s",
                    file=sys.stderr,
                    flush=True,
                )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", choices=sorted(MODELS), default=list(MODELS))
    parser.add_argument(
        "--dtypes", nargs="+", choices=["bfloat16", "float32"], default=["bfloat16"]
    )
    parser.add_argument("--seeds", nargs="+", type=int, default=list(SEEDS))
    parser.add_argument(
        "--target",
        type=float,
        default=1.1,
        help="exit 1 when a bfloat16 model's verdict against it is 'not met'",
    )
    args = parser.parse_args(argv)
    rows = run(args.models, args.dtypes, args.seeds)
    summaries = summarize(rows)
    print("\n".join(format_table(rows)))
    print()
    print("\n".join(format_summary(summaries, args.target)))
    verdicts = {s.model: s.verdict(args.target) for s in summaries if s.dtype == "bfloat16"}
    for verdict in ("within noise", "not met"):
        names = [name for name, v in verdicts.items() if v == verdict]
        if names:
            print(f"{args.target}x target {verdict}: {', '.join(names)}")
    return 1 if "not met" in verdicts.values() else 0


if __name__ == "__main__":
    raise SystemExit(main())
