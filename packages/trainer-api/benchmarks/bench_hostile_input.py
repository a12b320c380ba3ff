"""How long refusing hostile input takes, beside accepting ordinary input of the same kind.

The unit tests check that a refusal builds nothing big (``tests/test_quantity.py``,
``tests/test_yaml.py``: memory, which a loaded machine does not change); the time is measured
here, best of repeated calls, in one run against the baseline. Exits non-zero if a refusal takes
more than ``LIMIT_MS``.

    python packages/trainer-api/benchmarks/bench_hostile_input.py
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

from trainer_api import Quantity, ValidationError, parse

LIMIT_MS = 50.0


def _alias_bomb(levels: int) -> str:
    """A YAML document of ``levels`` nested alias lists (135,092 nodes at 12, once expanded)."""
    lines = ["apiVersion: trainer.kubeflow.org/v1alpha1", "kind: TrainJob", "metadata:"]
    lines += ["  name: bomb", "  labels:", "    a0: &e0 [x]"]
    for level in range(1, levels):
        refs = ", ".join([f"*e{level - 1}"] * 12)
        lines.append(f"    a{level}: &e{level} [{refs}]")
    return "\n".join(lines) + "\n"


ORDINARY_JOB = (
    "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata: {name: job}\n"
    "spec: {runtimeRef: {name: torch-distributed}, trainer: {numNodes: 2}}\n"
)


def _refusing(call: Callable[[], Any]) -> Callable[[], None]:
    def refuse() -> None:
        try:
            call()
        except (ValueError, ValidationError):
            return
        raise AssertionError("accepted what must be refused")

    return refuse


CASES: list[tuple[str, Callable[[], Any], Callable[[], Any]]] = [
    (
        "quantity 1e999999999",
        _refusing(lambda: Quantity.parse("1e999999999")),
        lambda: Quantity.parse("1e9"),
    ),
    (
        "quantity 5000 digits",
        _refusing(lambda: Quantity.parse("1" * 5000)),
        lambda: Quantity.parse("1" * 500),
    ),
    (
        "YAML alias bomb (12 levels)",
        _refusing(lambda: parse(_alias_bomb(12))),
        lambda: parse(ORDINARY_JOB),
    ),
]


def best_ms(call: Callable[[], Any], runs: int = 20) -> float:
    call()  # warm-up
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return min(times) * 1000


def main() -> int:
    print("| input | refusal (ms) | baseline: ordinary input (ms) |")
    print("|---|---:|---:|")
    failures = []
    for name, refuse, ordinary in CASES:
        refused, accepted = best_ms(refuse), best_ms(ordinary)
        print(f"| {name} | {refused:.3f} | {accepted:.3f} |")
        if refused > LIMIT_MS:
            failures.append(f"{name}: {refused:.1f} ms (limit {LIMIT_MS:.0f} ms)")
    for failure in failures:
        print(f"FAIL: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
