"""A trial TrainJob as the lifecycle reads it, and how a cluster's trial is read that way.

In a cluster a trial's objective is ``status.trainerStatus.metrics`` (what the progress
endpoint writes); its step is the ``step`` metric when reported, else the progress percentage,
else the next step after those recorded. The local driver reads a trial's whole history
instead (its ``log_metrics`` points or printed lines) and passes it keyed by step.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from trainer_search.trials import read_steps

__all__ = ["ObservedTrial", "TrialPhase", "observe_trainjob"]

TrialPhase = Literal["running", "complete", "failed"]
"""A trial TrainJob's own state: running (pending, suspended included), Complete or Failed."""


@dataclass(frozen=True)
class ObservedTrial:
    """A trial TrainJob as a driver sees it.

    ``annotations``: what the trial carries (its history); ``reported``: its objective by step
    as read now (a driver that sees only the latest value gives one step); ``stamp``: when the
    trial last reported, so that a value already recorded is not recorded twice (None: each
    reading is complete and keyed by step).
    """

    name: str
    annotations: Mapping[str, str]
    phase: TrialPhase = "running"
    reported: Mapping[int, float] = field(default_factory=dict)
    stamp: str | None = None
    suspended: bool = False


def _true(trainjob: Mapping[str, Any], kind: str) -> bool:
    return any(
        c.get("type") == kind and c.get("status") == "True"
        for c in (trainjob.get("status") or {}).get("conditions") or []
    )


def _number(text: object) -> float | None:
    """A reported number, non-finite ones included (a diverged run); None: not a number."""
    try:
        return float(str(text)) if text is not None else None
    except ValueError:
        return None


def observe_trainjob(trainjob: Mapping[str, Any], metric: str) -> ObservedTrial:
    """A cluster's trial TrainJob (a manifest): its annotations, phase and latest report."""
    metadata = trainjob["metadata"]
    annotations = dict(metadata.get("annotations") or {})
    status = (trainjob.get("status") or {}).get("trainerStatus") or {}
    reported = {m["name"]: m.get("value") for m in status.get("metrics") or [] if "name" in m}
    value = _number(reported.get(metric))
    steps: dict[int, float] = {}
    if value is not None:
        step = _number(reported.get("step"))
        progress = status.get("progressPercentage")
        if step is not None and math.isfinite(step):
            steps[int(step)] = value
        elif progress is not None:
            steps[int(progress)] = value
        else:
            steps[max(read_steps(annotations).steps, default=0) + 1] = value
    phase: TrialPhase = "running"
    if _true(trainjob, "Complete"):
        phase = "complete"
    elif _true(trainjob, "Failed"):
        phase = "failed"
    return ObservedTrial(
        name=metadata["name"],
        annotations=annotations,
        phase=phase,
        reported=steps,
        stamp=status.get("lastUpdatedTime"),
        suspended=bool((trainjob.get("spec") or {}).get("suspend")),
    )
