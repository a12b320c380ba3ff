"""A trial's objective, from whatever its training code reported.

Three ways, in this order: ``log_metrics`` (a history by step), ``name=value`` lines on stdout
(the format upstream's examples print and Katib's default collector reads; each line is the
next step), and ``update_trainjob_status`` metrics (latest values only).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from trainer_sdk.optimizer.types.optimization_types import Metric
from trainer_sdk.training.metrics import MetricPoint

__all__ = ["Observation", "observe", "stdout_history"]

_PAIR: Final = re.compile(
    r"(?<![\w|.-])([\w|-]+)\s*=\s*([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)(?![\w.])"
)


@dataclass(frozen=True)
class Observation:
    """Each metric's values by step, as far as the trial has reported them."""

    steps: dict[str, dict[int, float]] = field(default_factory=dict)

    def latest(self, metric: str) -> float | None:
        """The metric's value at its last step, or None."""
        history = self.steps.get(metric)
        return history[max(history)] if history else None

    def summary(self, metrics: Sequence[str]) -> list[Metric]:
        """Upstream's ``Metric`` (min, max, latest as strings) for each reported metric."""
        found = []
        for name in metrics:
            values = [v for _, v in sorted(self.steps.get(name, {}).items())]
            finite = [v for v in values if math.isfinite(v)]
            if values:
                low, high = (min(finite), max(finite)) if finite else (values[-1], values[-1])
                found.append(Metric(name, repr(low), repr(high), repr(values[-1])))
        return found


def stdout_history(lines: Iterable[str]) -> dict[str, dict[int, float]]:
    """``name=value`` pairs of ``lines``: the n-th value of a name is its step n."""
    history: dict[str, dict[int, float]] = {}
    for line in lines:
        for name, text in _PAIR.findall(line):
            steps = history.setdefault(name, {})
            steps[len(steps) + 1] = float(text)
    return history


def observe(
    points: Sequence[MetricPoint],
    lines: Iterable[str],
    status_metrics: Mapping[str, str],
    metrics: Sequence[str],
) -> Observation:
    """Each of ``metrics`` from the first source that has it."""
    logged: dict[str, dict[int, float]] = {}
    for point in points:
        if point.rank == 0:
            for name, value in point.values.items():
                logged.setdefault(name, {})[point.step] = value
    printed = stdout_history(lines)
    steps: dict[str, dict[int, float]] = {}
    for name in metrics:
        if logged.get(name):
            steps[name] = logged[name]
        elif printed.get(name):
            steps[name] = printed[name]
        elif name in status_metrics:
            try:
                steps[name] = {0: float(status_metrics[name])}
            except ValueError:
                continue  # a text metric is no objective
    return Observation(steps)
