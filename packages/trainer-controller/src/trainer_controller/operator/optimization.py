"""One OptimizationJob's next step, as a pure function of it and its trial TrainJobs.

The history lives on the trials (KEP-3562): each trial TrainJob carries its parameters, its
number, what the search engine noted for it and the objective per step seen so far, as
annotations; ``plan_optimization`` rebuilds the search core's history from them, so the
controller keeps no state. A trial's objective is ``status.trainerStatus.metrics`` (what the
progress endpoint writes); its step is the ``step`` metric when reported, else the progress
percentage, else the count of distinct reports.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

import trainer_api
from trainer_api import (
    PARAMETERS_ANNOTATION,
    SUSPEND_ANNOTATION,
    OptimizationJob,
    max_failed_trials,
)
from trainer_search import (
    ENGINE_STATE_ANNOTATION,
    PRUNED_ANNOTATION,
    STEPS_ANNOTATION,
    TRIAL_ANNOTATION,
    Study,
    TrialRecord,
    TrialState,
    assignment_strings,
    best_trial,
    check_pruning,
    study_from_job,
    suggest,
    trial_trainjob,
)

__all__ = [
    "ENGINE_STATE_ANNOTATION",
    "PRUNED_ANNOTATION",
    "STEPS_ANNOTATION",
    "TRIAL_ANNOTATION",
    "OptimizationPlan",
    "TrialPatch",
    "plan_optimization",
]

MAX_STEPS_KEPT: Final = 200


@dataclass(frozen=True)
class TrialPatch:
    """A merge patch of one trial TrainJob."""

    name: str
    patch: dict[str, Any]


@dataclass(frozen=True)
class OptimizationPlan:
    """What to create and patch, and the status to write (None: leave it)."""

    create: tuple[dict[str, Any], ...] = ()
    patches: tuple[TrialPatch, ...] = ()
    status: dict[str, Any] | None = None
    messages: tuple[str, ...] = field(default=())


def _true(trainjob: Mapping[str, Any], kind: str) -> bool:
    return any(
        c.get("type") == kind and c.get("status") == "True"
        for c in (trainjob.get("status") or {}).get("conditions") or []
    )


def _reported(trainjob: Mapping[str, Any]) -> tuple[dict[str, str], int | None]:
    status = (trainjob.get("status") or {}).get("trainerStatus") or {}
    metrics = {m["name"]: m["value"] for m in status.get("metrics") or [] if "name" in m}
    return metrics, status.get("progressPercentage")


def _number(text: str | None) -> float | None:
    try:
        value = float(text) if text is not None else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) else None


@dataclass
class _Trial:
    """A trial TrainJob read back as the search core's record, and what changed in it."""

    manifest: dict[str, Any]
    record: TrialRecord
    history: dict[str, Any]
    annotations: dict[str, str]


def _read_trial(trainjob: dict[str, Any], metric: str) -> _Trial:
    annotations = dict(trainjob["metadata"].get("annotations") or {})
    history = json.loads(annotations.get(STEPS_ANNOTATION, '{"seen": null, "steps": {}}'))
    reported, progress = _reported(trainjob)
    value = _number(reported.get(metric))
    stamp = ((trainjob.get("status") or {}).get("trainerStatus") or {}).get("lastUpdatedTime")
    steps: dict[str, float] = history["steps"]
    if value is not None and stamp != history.get("seen"):
        step = _number(reported.get("step"))
        at = int(step) if step is not None else progress if progress is not None else len(steps) + 1
        steps[str(at)] = value
        history["seen"] = stamp
        if len(steps) > MAX_STEPS_KEPT:
            del steps[min(steps, key=int)]
    state: TrialState = "running"
    pruned = annotations.get(PRUNED_ANNOTATION)
    objective = value
    if pruned is not None:
        state = "pruned"
    elif _true(trainjob, "Complete"):
        state = "complete" if value is not None else "failed"
    elif _true(trainjob, "Failed"):
        state = "failed"
    record = TrialRecord(
        number=int(annotations[TRIAL_ANNOTATION]),
        parameters=json.loads(annotations[PARAMETERS_ANNOTATION]),
        state=state,
        objective=objective if state in ("complete", "pruned") else None,
        steps={int(s): v for s, v in steps.items()},
        checked_step=history.get("checked"),
        engine_state=json.loads(annotations.get(ENGINE_STATE_ANNOTATION, "{}")),
        pruned_at_step=int(pruned) if pruned is not None else None,
    )
    return _Trial(trainjob, record, history, annotations)


def _condition(
    old: Sequence[Mapping[str, Any]],
    kind: str,
    status: bool,
    reason: str,
    message: str,
    now: datetime,
) -> dict[str, Any]:
    """A condition; its transition time moves only when its status does."""
    text = "True" if status else "False"
    previous = next((c for c in old if c.get("type") == kind), None)
    same = previous is not None and previous.get("status") == text
    return {
        "type": kind,
        "status": text,
        "reason": reason,
        "message": message,
        "lastTransitionTime": previous["lastTransitionTime"]
        if same and previous is not None
        else now.strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def plan_optimization(
    manifest: dict[str, Any], trainjobs: Sequence[dict[str, Any]], now: datetime
) -> OptimizationPlan:
    """What the controller does next for ``manifest`` given its trial TrainJobs."""
    old_conditions = (manifest.get("status") or {}).get("conditions") or []
    try:
        job = trainer_api.apply_defaults(trainer_api.parse(manifest))
        assert isinstance(job, OptimizationJob)
        if errors := trainer_api.validate(job):
            raise ValueError("; ".join(str(error) for error in errors))
        study = study_from_job(job)
        failures_allowed = max_failed_trials(job)
    except (ValueError, trainer_api.ValidationError) as error:
        invalid = _condition(old_conditions, "Failed", True, "InvalidSpec", str(error), now)
        return OptimizationPlan(status={"conditions": [invalid]})
    metric = job.spec.objectives[0].metric
    trials = sorted((_read_trial(t, metric) for t in trainjobs), key=lambda t: t.record.number)
    suspended = (job.metadata.annotations or {}).get(SUSPEND_ANNOTATION) == "true"
    patches = list(_observe(study, trials, suspended))
    records = [t.record for t in trials]
    finished = {"complete", "failed", "pruned"}
    failed = sum(r.state == "failed" for r in records)
    running = sum(r.state == "running" for r in records)
    total = job.spec.num_trials or 1
    done = _true(manifest, "Complete") or _true(manifest, "Failed")
    create: list[dict[str, Any]] = []
    terminal: tuple[str, str, str] | None = None
    if not done and failures_allowed is not None and failed > failures_allowed:
        terminal = (
            "Failed",
            "MaxFailedTrialsReached",
            f"{failed} trials failed (max {failures_allowed})",
        )
    elif not done and not suspended:
        free = min((job.spec.parallel_trials or 1) - running, total - len(records))
        for offset, suggestion in enumerate(suggest(study, records, max(free, 0))):
            create.append(
                trial_trainjob(
                    manifest, len(records) + offset, suggestion.parameters, suggestion.engine_state
                )
            )
        if not create and running == 0 and all(r.state in finished for r in records):
            complete = sum(r.state == "complete" for r in records)
            terminal = (
                ("Complete", "MaxTrialsReached", f"{complete} of {len(records)} trials completed")
                if complete
                else ("Failed", "NoTrialSucceeded", "no trial reported its objective")
            )
    conditions = [
        _condition(
            old_conditions,
            "Created",
            True,
            "TrialsCreated",
            "trials are created from the template",
            now,
        )
    ]
    if suspended and terminal is None and not done:
        conditions.append(
            _condition(
                old_conditions, "Suspended", True, "Suspended", f"{SUSPEND_ANNOTATION} is true", now
            )
        )
    elif any(c.get("type") == "Suspended" for c in old_conditions):
        conditions.append(_condition(old_conditions, "Suspended", False, "Resumed", "resumed", now))
    active = running + len(create)
    if terminal is None and not done:
        conditions.append(
            _condition(
                old_conditions,
                "Running",
                active > 0,
                "TrialsRunning",
                f"{active} trials running",
                now,
            )
        )
    else:
        conditions.append(
            _condition(old_conditions, "Running", False, "Finished", "no trial is running", now)
        )
    if terminal is not None:
        conditions.append(
            _condition(old_conditions, terminal[0], True, terminal[1], terminal[2], now)
        )
    conditions += [
        c for c in old_conditions if c.get("type") in ("Complete", "Failed") and terminal is None
    ]
    status: dict[str, Any] = {"conditions": conditions}
    best = best_trial(study, records)
    if best is not None:
        winner = next(t for t in trials if t.record.number == best.number)
        status["result"] = {
            "trainJobName": winner.manifest["metadata"]["name"],
            "parameters": [
                {"name": k, "value": v} for k, v in assignment_strings(best.parameters).items()
            ],
        }
    return OptimizationPlan(tuple(create), tuple(patches), status)


def _observe(study: Study, trials: list[_Trial], suspended: bool) -> list[TrialPatch]:
    """Patches that record what each trial reported, stop pruned ones and (un)suspend."""
    patches = []
    history = [t.record for t in trials]
    for trial in trials:
        record = trial.record
        annotations: dict[str, str | None] = {}
        spec: dict[str, Any] = {}
        if record.state == "running" and study.early_stopping is not None:
            decision = check_pruning(study, history, record.number)
            trial.history["checked"] = decision.checked_step
            if decision.engine_state != dict(record.engine_state):
                annotations[ENGINE_STATE_ANNOTATION] = json.dumps(
                    decision.engine_state, sort_keys=True
                )
            if decision.prune:
                annotations[PRUNED_ANNOTATION] = str(decision.at_step)
                spec["suspend"] = True  # stops its pods, keeps the TrainJob and its status
        steps = json.dumps(trial.history, sort_keys=True)
        if steps != trial.annotations.get(STEPS_ANNOTATION):
            annotations[STEPS_ANNOTATION] = steps
        if record.state == "running" and PRUNED_ANNOTATION not in annotations:
            wanted = suspended
            if bool((trial.manifest.get("spec") or {}).get("suspend")) != wanted:
                spec["suspend"] = wanted
        patch: dict[str, Any] = {}
        if annotations:
            patch["metadata"] = {"annotations": annotations}
        if spec:
            patch["spec"] = spec
        if patch:
            patches.append(TrialPatch(trial.manifest["metadata"]["name"], patch))
    return patches
