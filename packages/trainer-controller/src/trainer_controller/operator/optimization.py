"""The OptimizationJob controller's side of the one search lifecycle (``trainer_search.decide``):
trial TrainJobs read as observed trials (``observe_trainjob``), the decision turned into the
objects and merge patches to write. The history lives on the trials' annotations, so the
controller keeps no state and a restarted controller goes on where the last one stopped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from trainer_search import TrialChange, decide, observe_trainjob, trial_trainjob

__all__ = ["OptimizationPlan", "TrialPatch", "plan_optimization"]


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
        [observe_trainjob(t, metric) for t in trainjobs],
        now,
        prior=[observe_trainjob(t, metric) for t in prior],
    )
    create = tuple(
        trial_trainjob(manifest, new.number, new.parameters, new.engine_state)
        for new in decision.create
    )
    return OptimizationPlan(create, tuple(map(_patch, decision.changes)), decision.status)
