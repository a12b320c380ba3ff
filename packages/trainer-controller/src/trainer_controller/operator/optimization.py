"""The OptimizationJob controller's side of the one search lifecycle (``trainer_search.decide``):
trial TrainJobs read as observed trials, and the decision turned into API writes.

A trial's objective is ``status.trainerStatus.metrics`` (what the progress endpoint writes); its
step is the ``step`` metric when reported, else the progress percentage, else the next step
after those recorded. The history itself lives on the trials' annotations, so the controller
keeps no state and a restarted controller goes on where the last one stopped.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from trainer_search import (
    ObservedTrial,
    TrialChange,
    TrialPhase,
    decide,
    read_steps,
    trial_trainjob,
)

__all__ = ["OptimizationPlan", "TrialPatch", "observe_trial", "plan_optimization"]


@dataclass(frozen=True)
class TrialPatch:
    """A merge patch of one trial TrainJob."""

    name: str
    patch: dict[str, Any]


@dataclass(frozen=True)
class OptimizationPlan:
    """What to create and patch, and the status to write."""

    create: tuple[dict[str, Any], ...] = ()
    patches: tuple[TrialPatch, ...] = ()
    status: dict[str, Any] | None = None


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


def observe_trial(trainjob: Mapping[str, Any], metric: str) -> ObservedTrial:
    """A trial TrainJob as the lifecycle reads it: its annotations, phase and latest report."""
    metadata = trainjob["metadata"]
    annotations = dict(metadata.get("annotations") or {})
    status = (trainjob.get("status") or {}).get("trainerStatus") or {}
    reported = {m["name"]: m.get("value") for m in status.get("metrics") or [] if "name" in m}
    value = _number(reported.get(metric))
    stamp = status.get("lastUpdatedTime")
    steps: dict[int, float] = {}
    if value is not None:
        step = _number(reported.get("step"))
        progress = status.get("progressPercentage")
        recorded = read_steps(annotations).steps
        if step is not None and math.isfinite(step):
            steps[int(step)] = value
        elif progress is not None:
            steps[int(progress)] = value
        else:
            steps[max(recorded, default=0) + 1] = value
    phase: TrialPhase = (
        "complete"
        if _true(trainjob, "Complete")
        else "failed"
        if _true(trainjob, "Failed")
        else "running"
    )
    return ObservedTrial(
        name=metadata["name"],
        annotations=annotations,
        phase=phase,
        reported=steps,
        stamp=stamp,
        suspended=bool((trainjob.get("spec") or {}).get("suspend")),
    )


def _metric(manifest: Mapping[str, Any]) -> str:
    """The objective's metric as the manifest names it ("" when it does not: invalid, and
    ``decide`` says why)."""
    objectives = (manifest.get("spec") or {}).get("objectives") or [{}]
    return str(objectives[0].get("metric") or "")


def _patch(change: TrialChange) -> TrialPatch:
    """A trial's change as a merge patch: stopping suspends it (its pods end, the TrainJob and
    its status stay)."""
    patch: dict[str, Any] = {}
    if change.annotations:
        patch["metadata"] = {"annotations": dict(change.annotations)}
    if change.stop or change.suspend is not None:
        patch["spec"] = {"suspend": change.stop or bool(change.suspend)}
    return TrialPatch(change.name, patch)


def plan_optimization(
    manifest: dict[str, Any],
    trainjobs: Sequence[Mapping[str, Any]],
    now: datetime,
    prior: Sequence[Mapping[str, Any]] = (),
) -> OptimizationPlan:
    """The lifecycle's decision for ``manifest``, its trial TrainJobs and, when it warm-starts,
    the earlier job's trials ``prior``, as the objects and patches to write."""
    metric = _metric(manifest)
    decision = decide(
        manifest,
        [observe_trial(t, metric) for t in trainjobs],
        now,
        prior=[observe_trial(t, metric) for t in prior],
    )
    create = tuple(
        trial_trainjob(manifest, new.number, new.parameters, new.engine_state)
        for new in decision.create
    )
    return OptimizationPlan(create, tuple(map(_patch, decision.changes)), decision.status)
