"""One OptimizationJob's next step, as a pure function of it and its trials' observed states.

Both drivers call ``decide``: the operator with the trial TrainJobs it lists in a cluster, the
SDK's local optimizer with the local TrainJobs it started. A trial carries its history as
annotations (KEP-3562): its number, parameters, what the engine noted, the objective per step
seen so far and the step where the stopping rule ended it. ``decide`` rebuilds the search
history from them and says what to create, what to record on each trial, which trials to stop
or (un)suspend, and the job's status (conditions and best trial). Drivers apply that and decide
nothing themselves: the failure budget, parallelism, completion and the best trial are ruled
here, once, for both.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final, Literal

import trainer_api
from trainer_api import (
    PARAMETERS_ANNOTATION,
    SUSPEND_ANNOTATION,
    OptimizationJob,
    max_failed_trials,
)

from trainer_search.engine import Suggestion, best_trial, check_pruning, suggest
from trainer_search.observed import ObservedTrial
from trainer_search.space import (
    Choice,
    Study,
    TrialRecord,
    TrialState,
    assignment_strings,
    study_from_job,
)
from trainer_search.trials import (
    ENGINE_STATE_ANNOTATION,
    PRUNED_ANNOTATION,
    STEPS_ANNOTATION,
    TRIAL_ANNOTATION,
    StepsRecord,
    read_steps,
    trial_annotations,
    trial_name,
)

__all__ = [
    "MAX_STEPS_KEPT",
    "Decision",
    "NewTrial",
    "TrialChange",
    "decide",
    "job_message",
    "job_phase",
    "trial_record",
]

MAX_STEPS_KEPT: Final = 200
"""The objective steps a trial's annotation keeps (the latest ones)."""

JobPhase = Literal["Created", "Running", "Complete", "Failed"]


@dataclass(frozen=True)
class NewTrial:
    """A trial to create: its number, name, parameters and the annotations it starts with."""

    number: int
    name: str
    parameters: Mapping[str, Any]
    engine_state: Mapping[str, Any]
    annotations: Mapping[str, str]


@dataclass(frozen=True)
class TrialChange:
    """What to do to an existing trial: annotations to set, end its run (``stop``: the
    stopping rule pruned it or the job ended; its TrainJob, logs and metrics are kept), or set
    its suspension (None: leave it)."""

    name: str
    annotations: Mapping[str, str] = field(default_factory=dict)
    stop: bool = False
    suspend: bool | None = None


@dataclass(frozen=True)
class Decision:
    """What a driver applies: trials to create, changes to trials, the job's status to write
    (upstream's schema: conditions and result) and the search history as decided."""

    create: tuple[NewTrial, ...] = ()
    changes: tuple[TrialChange, ...] = ()
    status: dict[str, Any] = field(default_factory=dict)
    history: tuple[TrialRecord, ...] = ()

    @property
    def phase(self) -> JobPhase:
        """The job's phase as this status says it."""
        return job_phase(self.status)


_PHASE_ORDER: Final[tuple[JobPhase, ...]] = ("Failed", "Complete", "Running", "Created")


def job_phase(status: Mapping[str, Any] | None) -> JobPhase:
    """An OptimizationJob's phase: its most advanced condition that is True."""
    true = {
        c.get("type") for c in (status or {}).get("conditions") or [] if c.get("status") == "True"
    }
    return next((phase for phase in _PHASE_ORDER if phase in true), "Created")


def job_message(status: Mapping[str, Any] | None) -> str:
    """The message of the condition that sets the job's phase ("" for none)."""
    phase = job_phase(status)
    conditions = (status or {}).get("conditions") or []
    return next((str(c.get("message", "")) for c in conditions if c.get("type") == phase), "")


def trial_record(trial: ObservedTrial) -> tuple[TrialRecord, StepsRecord]:
    """The search core's record of ``trial``, its reported steps merged into what it carries.

    A trial that completed without a finite objective (it reported none, or NaN or infinity:
    a diverged run) is failed for the search; its last value is kept for display."""
    annotations = trial.annotations
    recorded = read_steps(annotations)
    steps = dict(recorded.steps)
    seen = recorded.seen
    if trial.reported and (trial.stamp is None or trial.stamp != recorded.seen):
        steps.update(trial.reported)
        seen = trial.stamp
    for step in sorted(steps)[:-MAX_STEPS_KEPT]:
        del steps[step]
    latest = steps[max(steps)] if steps else None
    pruned = annotations.get(PRUNED_ANNOTATION)
    state: TrialState = "running"
    if pruned is not None:
        state = "pruned"
    elif trial.phase == "complete":
        state = "complete" if latest is not None and math.isfinite(latest) else "failed"
    elif trial.phase == "failed":
        state = "failed"
    record = TrialRecord(
        number=int(annotations[TRIAL_ANNOTATION]),
        parameters=json.loads(annotations[PARAMETERS_ANNOTATION]),
        state=state,
        objective=latest,
        steps=steps,
        checked_step=recorded.checked,
        engine_state=json.loads(annotations.get(ENGINE_STATE_ANNOTATION, "{}")),
        pruned_at_step=int(pruned) if pruned is not None else None,
    )
    return record, StepsRecord(seen, steps, recorded.checked)


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


def _admit(manifest: Mapping[str, Any]) -> tuple[OptimizationJob, Study, int | None]:
    """The job, its study and its failure budget; ValueError names what is invalid. The
    answer for a given metadata and spec is remembered: a driver asks every pass, and parsing
    and validating the job is most of a pass's cost (never changed: the result is read only)."""
    fields = {key: manifest.get(key) for key in ("apiVersion", "kind", "metadata", "spec")}
    return _admit_text(json.dumps(fields, sort_keys=True, default=str))


@functools.lru_cache(maxsize=32)
def _admit_text(text: str) -> tuple[OptimizationJob, Study, int | None]:
    job = trainer_api.apply_defaults(trainer_api.parse(json.loads(text)))
    if not isinstance(job, OptimizationJob):
        raise ValueError(f"kind: expected OptimizationJob, got {job.kind}")
    if errors := trainer_api.validate(job):
        raise ValueError("; ".join(str(error) for error in errors))
    return job, study_from_job(job), max_failed_trials(job)


def _fits(study: Study, record: TrialRecord) -> bool:
    """Whether a trial of another search lies in ``study``'s space (warm start)."""
    for name, domain in study.space.items():
        value = record.parameters.get(name)
        if value is None:
            return False
        if isinstance(domain, Choice):
            if str(value) not in domain.choices:
                return False
            continue
        try:
            number = float(value)
        except ValueError:
            return False
        if not domain.low <= number <= domain.high:
            return False
    return True


def _prior_records(study: Study, prior: Sequence[ObservedTrial]) -> list[TrialRecord]:
    """Another search's finished trials that fit ``study``, numbered before this one's (< 0)."""
    finished = [
        record
        for record, _ in map(trial_record, prior)
        if record.state in ("complete", "failed", "pruned") and _fits(study, record)
    ]
    finished.sort(key=lambda record: record.number)
    return [
        TrialRecord(
            number=index - len(finished),
            parameters=record.parameters,
            state=record.state,
            objective=record.objective,
            steps=record.steps,
        )
        for index, record in enumerate(finished)
    ]


def decide(
    manifest: Mapping[str, Any],
    trials: Sequence[ObservedTrial],
    now: datetime,
    *,
    capacity: int | None = None,
    prior: Sequence[ObservedTrial] = (),
) -> Decision:
    """What happens next to the OptimizationJob ``manifest`` (with its status) and ``trials``.

    ``capacity``: how many trials the driver can run at once (the local backend's cores; None:
    no limit of its own); the job runs ``min(parallelTrials, capacity)`` and says so.
    ``prior``: the trials of the search this one warm-starts from (the driver reads them)."""
    old = (manifest.get("status") or {}).get("conditions") or []
    try:
        job, study, failures_allowed = _admit(manifest)
    except (ValueError, trainer_api.ValidationError) as error:
        invalid = _condition(old, "Failed", True, "InvalidSpec", str(error), now)
        return Decision(status={"conditions": [invalid]})
    read = sorted(((*trial_record(t), t) for t in trials), key=lambda read: read[0].number)
    records = [record for record, _, _ in read]
    prior_records = _prior_records(study, prior)
    suspended = (job.metadata.annotations or {}).get(SUSPEND_ANNOTATION) == "true"
    done = job_phase(manifest.get("status")) in ("Complete", "Failed")

    annotations: dict[str, dict[str, str]] = {trial.name: {} for trial in trials}
    stop: set[str] = set()
    suspend: dict[str, bool] = {}
    for index, (record, steps, trial) in enumerate(read):
        changed = annotations[trial.name]
        if record.state == "running" and study.early_stopping is not None:
            decision = check_pruning(study, prior_records + records, record.number)
            steps = StepsRecord(steps.seen, steps.steps, decision.checked_step)
            if decision.engine_state != dict(record.engine_state):
                changed[ENGINE_STATE_ANNOTATION] = json.dumps(decision.engine_state, sort_keys=True)
            if decision.prune:
                changed[PRUNED_ANNOTATION] = str(decision.at_step)
                stop.add(trial.name)
                records[index] = record = dataclasses.replace(
                    record,
                    state="pruned",
                    checked_step=decision.checked_step,
                    engine_state=decision.engine_state,
                    pruned_at_step=decision.at_step,
                )
        text = steps.to_annotation()
        if text != trial.annotations.get(STEPS_ANNOTATION):
            changed[STEPS_ANNOTATION] = text
        if not done and record.state == "running" and trial.suspended != suspended:
            suspend[trial.name] = suspended

    failed = sum(r.state == "failed" for r in records)
    running = sum(r.state == "running" for r in records)
    total = job.spec.num_trials or 1
    parallel = job.spec.parallel_trials or 1
    slots = parallel if capacity is None else max(1, min(parallel, capacity))
    create: list[NewTrial] = []
    terminal: tuple[str, str, str] | None = None
    if not done and failures_allowed is not None and failed > failures_allowed:
        terminal = (
            "Failed",
            "MaxFailedTrialsReached",
            f"{failed} trials failed (max {failures_allowed})",
        )
        # The job ends: its running trials end with it, kept with their logs.
        for record, _, trial in read:
            if record.state == "running":
                stop.add(trial.name)
                suspend.pop(trial.name, None)
    elif not done and not suspended:
        free = min(slots - running, total - len(records))
        history = prior_records + records
        first = max((r.number for r in records), default=-1) + 1  # never a number in use
        for offset, suggestion in enumerate(suggest(study, history, max(free, 0))):
            create.append(_new_trial(str(job.metadata.name), first + offset, suggestion))
        if not create and running == 0:
            complete = sum(r.state == "complete" for r in records)
            terminal = (
                ("Complete", "MaxTrialsReached", f"{complete} of {len(records)} trials completed")
                if complete
                else ("Failed", "NoTrialSucceeded", "no trial reported a finite objective")
            )
    changes = tuple(
        TrialChange(name, annotations[name], name in stop, suspend.get(name))
        for name in (trial.name for _, _, trial in read)
        if annotations[name] or name in stop or name in suspend
    )

    created = "trials are created from the template"
    conditions = [_condition(old, "Created", True, "TrialsCreated", created, now)]
    if suspended and terminal is None and not done:
        conditions.append(
            _condition(old, "Suspended", True, "Suspended", f"{SUSPEND_ANNOTATION} is true", now)
        )
    elif any(c.get("type") == "Suspended" for c in old):
        conditions.append(_condition(old, "Suspended", False, "Resumed", "resumed", now))
    active = running + len(create)
    if terminal is None and not done:
        message = f"{active} trials running"
        if slots < parallel:
            message += f" (parallelTrials {parallel}; this driver runs at most {slots} at once)"
        conditions.append(_condition(old, "Running", active > 0, "TrialsRunning", message, now))
    else:
        conditions.append(_condition(old, "Running", False, "Finished", "no trial is running", now))
    if terminal is not None:
        kind, reason, message = terminal
        conditions.append(_condition(old, kind, True, reason, message, now))
    conditions += [c for c in old if c.get("type") in ("Complete", "Failed") and terminal is None]
    status: dict[str, Any] = {"conditions": conditions}
    best = best_trial(study, records)
    if best is not None:
        status["result"] = {
            "trainJobName": trial_name(str(job.metadata.name), best.number),
            "parameters": [
                {"name": k, "value": v} for k, v in assignment_strings(best.parameters).items()
            ],
        }
    return Decision(tuple(create), changes, status, tuple(records))


def _new_trial(job_name: str, number: int, suggestion: Suggestion) -> NewTrial:
    return NewTrial(
        number=number,
        name=trial_name(job_name, number),
        parameters=dict(suggestion.parameters),
        engine_state=dict(suggestion.engine_state),
        annotations=trial_annotations(number, suggestion.parameters, suggestion.engine_state),
    )
