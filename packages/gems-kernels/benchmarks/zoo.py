"""The model zoo's table: per model of ``model_zoo``, the training step's compute ops served by
gems and left to ATen, the float32 error against float64 and against ATen, and the bfloat16
error ratio against ATen's over seeds (``real_models`` does the runs).

Targets (the exit status is 1 when a model misses one): no compute op left to ATen; float32
gems within 1e-5 of float64 at every float32 seed (the largest error relative to the
reference's largest magnitude, logits and gradients); bfloat16 gems / ATen error against
float64 not "not met" at 1.1x on the median of the per-seed ratios (``real_models.Summary``).

Every run's rows are merged into ``zoo_results.json`` as each seed ends (a row replaces the
stored row of its model, dtype and seed), and the table is made from everything stored there, so
the zoo can be measured in parts (``--models``, ``--part K/N``) and one command keeps it current:

    TRITON_INTERPRET=1 python packages/gems-kernels/benchmarks/zoo.py --readme
    TRITON_INTERPRET=1 python packages/gems-kernels/benchmarks/zoo.py --part 2/5 --readme
    TRITON_INTERPRET=1 python packages/gems-kernels/benchmarks/zoo.py --models t5 swin \\
        --fp32-seeds --bf16-seeds 0 1 2
    python packages/gems-kernels/benchmarks/zoo.py --fp32-seeds --bf16-seeds --readme  # no run

``--readme`` rewrites the table in the package README and, for the models stored, the
overloads each model's step calls in ``zoo_ops.json`` (which ``flaggems_diff.py`` reads).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

sys.path.insert(0, str(Path(__file__).resolve().parent))
import readme_tables
import real_models

__all__ = [
    "OPS_JSON",
    "README",
    "RESULTS",
    "ZooRow",
    "format_zoo",
    "load_results",
    "main",
    "merge",
    "part",
    "save_results",
    "step_ops",
    "zoo_rows",
]

README: Final = Path(__file__).resolve().parents[1] / "README.md"
OPS_JSON: Final = Path(__file__).resolve().parent / "zoo_ops.json"
RESULTS: Final = Path(__file__).resolve().parent / "zoo_results.json"
FP32_TARGET: Final = 1e-5


@dataclass(frozen=True)
class ZooRow:
    """One model over its float32 and bfloat16 runs."""

    model: str
    gems_ops: int
    """The most overloads one run had on gems."""
    aten_ops: tuple[str, ...]
    """Every overload some run left to ATen."""
    fp32_seeds: int
    fp32_gems: float
    """The largest float32 error against float64 over the seeds (logits or gradients)."""
    fp32_aten: float
    fp32_gems_vs_aten: float
    bf16: real_models.Summary | None

    def missed(self, bf16_target: float) -> list[str]:
        """The targets this model misses."""
        misses = []
        if self.aten_ops:
            misses.append("ops left to ATen")
        if self.fp32_gems > FP32_TARGET:
            misses.append(f"float32 over {FP32_TARGET:g}")
        if self.bf16 is not None and self.bf16.verdict(bf16_target) == "not met":
            misses.append(f"bfloat16 over {bf16_target}x")
        return misses


def zoo_rows(rows: Sequence[real_models.ModelError]) -> list[ZooRow]:
    """One :class:`ZooRow` per model, in the order of ``rows``."""
    summaries = {s.model: s for s in real_models.summarize(rows) if s.dtype == "bfloat16"}
    by_model: dict[str, list[real_models.ModelError]] = {}
    for row in rows:
        by_model.setdefault(row.model, []).append(row)
    result = []
    for model, runs in by_model.items():
        fp32 = [r for r in runs if r.dtype == "float32"]
        result.append(
            ZooRow(
                model=model,
                gems_ops=max(r.gems_ops for r in runs),
                aten_ops=tuple(sorted({op for r in runs for op in r.native_ops})),
                fp32_seeds=len(fp32),
                fp32_gems=max((max(r.gems_logits, r.gems_grads) for r in fp32), default=0.0),
                fp32_aten=max((max(r.aten_logits, r.aten_grads) for r in fp32), default=0.0),
                fp32_gems_vs_aten=max(
                    (max(r.gems_vs_aten_logits, r.gems_vs_aten_grads) for r in fp32), default=0.0
                ),
                bf16=summaries.get(model),
            )
        )
    return result


def format_zoo(rows: Sequence[ZooRow], bf16_target: float) -> Iterator[str]:
    """A Markdown table of ``rows``."""
    yield ("| model | ops on gems | left to ATen | fp32 seeds | fp32 gems vs float64 "
           "| fp32 ATen vs float64 | fp32 gems vs ATen | bf16 seeds | bf16 logits ratio "
           "| bf16 grads ratio | bf16 verdict |")  # fmt: skip
    yield "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
    for r in rows:
        fp32 = (
            f"| {r.fp32_seeds} | {r.fp32_gems:.1e} | {r.fp32_aten:.1e} | {r.fp32_gems_vs_aten:.1e} "
            if r.fp32_seeds
            else "| 0 | - | - | - "
        )
        bf16 = r.bf16
        ratios = (
            f"| {bf16.seeds} | {bf16.logits_ratios[0]:.2f} ({bf16.logits_ratios[1]:.2f} - "
            f"{bf16.logits_ratios[2]:.2f}) | {bf16.grads_ratios[0]:.2f} "
            f"({bf16.grads_ratios[1]:.2f} - {bf16.grads_ratios[2]:.2f}) "
            f"| {bf16.verdict(bf16_target)} |"
            if bf16 is not None
            else "| 0 | - | - | - |"
        )
        yield f"| {r.model} | {r.gems_ops} | {', '.join(r.aten_ops) or 'none'} {fp32}{ratios}"


def step_ops(rows: Sequence[real_models.ModelError]) -> dict[str, list[str]]:
    """Per model, every computing overload some run of its step called."""
    ops: dict[str, set[str]] = {}
    for row in rows:
        ops.setdefault(row.model, set()).update(row.step_ops)
    return {model: sorted(names) for model, names in ops.items()}


def load_results(path: Path) -> list[real_models.ModelError]:
    """The rows stored at ``path`` (none when it does not exist)."""
    if not path.exists():
        return []
    return [
        real_models.ModelError(
            **{k: tuple(v) if isinstance(v, list) else v for k, v in row.items()}
        )
        for row in json.loads(path.read_text())
    ]


def save_results(path: Path, rows: Sequence[real_models.ModelError]) -> None:
    """Store ``rows`` at ``path`` as JSON, replacing the file at once (parts read it)."""
    written = path.with_suffix(f".{os.getpid()}.tmp")
    written.write_text(json.dumps([dataclasses.asdict(r) for r in rows], indent=1) + "\n")
    written.replace(path)


def merge(
    stored: Sequence[real_models.ModelError], new: Sequence[real_models.ModelError]
) -> list[real_models.ModelError]:
    """``stored`` with ``new`` replacing the rows of the same model, dtype and seed, in the zoo's
    model order, then dtype (float32 first) and seed."""
    keyed = {(r.model, r.dtype, r.seed): r for r in [*stored, *new]}
    order = {name: i for i, name in enumerate(real_models.MODELS)}
    return sorted(
        keyed.values(), key=lambda r: (order.get(r.model, len(order)), r.dtype != "float32", r.seed)
    )


def part(models: Sequence[str], spec: str) -> list[str]:
    """Part ``K/N`` of ``models``: every N-th model from the K-th (so parts mix slow and fast
    models); raises ``ValueError`` naming ``--part`` when ``spec`` is not ``K/N`` with
    ``1 <= K <= N``."""
    try:
        k, n = (int(x) for x in spec.split("/"))
    except ValueError:
        raise ValueError(f"--part: expected K/N such as 2/5, got {spec!r}") from None
    if not 1 <= k <= n:
        raise ValueError(f"--part: expected 1 <= K <= N, got {spec!r}")
    return list(models[k - 1 :: n])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    models = list(real_models.MODELS)
    parser.add_argument("--models", nargs="+", choices=models, default=models)
    parser.add_argument("--part", help="run part K of N of --models (K/N)")
    parser.add_argument("--fp32-seeds", nargs="*", type=int, default=[0, 1, 2])
    parser.add_argument("--bf16-seeds", nargs="*", type=int, default=list(real_models.SEEDS))
    parser.add_argument("--target", type=float, default=1.1, help="the bfloat16 ratio target")
    parser.add_argument(
        "--readme", action="store_true", help=f"write the table into {README} and {OPS_JSON}"
    )
    parser.add_argument("--results", type=Path, default=RESULTS, help="the stored rows")
    args = parser.parse_args(argv)
    try:
        chosen = part(args.models, args.part) if args.part else args.models
    except ValueError as error:
        parser.error(str(error))
    for name in chosen:
        for dtype, seeds in (("float32", args.fp32_seeds), ("bfloat16", args.bf16_seeds)):
            for seed in seeds:
                new = real_models.run([name], [dtype], [seed])
                # Read again: another part may have stored its rows meanwhile.
                save_results(args.results, merge(load_results(args.results), new))
    rows = load_results(args.results)
    table = list(format_zoo(zoo_rows(rows), args.target))
    print("\n".join(table))
    if args.readme:
        readme_tables.replace_section(README, "zoo", table)
        stored = json.loads(OPS_JSON.read_text()) if OPS_JSON.exists() else {}
        ops = {**stored, **step_ops(rows)}
        ordered = sorted(ops, key=lambda m: list(real_models.MODELS).index(m))
        OPS_JSON.write_text(json.dumps({m: ops[m] for m in ordered}, indent=1) + "\n")
    missed = {row.model: row.missed(args.target) for row in zoo_rows(rows)}
    for model, misses in missed.items():
        if misses:
            print(f"{model}: {'; '.join(misses)}")
    return 1 if any(missed.values()) else 0


if __name__ == "__main__":
    raise SystemExit(main())
