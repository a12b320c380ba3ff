"""``build``: one reconcile step of a TrainJob, as a pure function.

Decisions, in order:

1. ``spec.managedBy`` names another controller: nothing to do, no status.
2. The job is already Complete or Failed: nothing is built again (also when its JobSet is gone).
3. ``runtimeRef`` is not a trainer.kubeflow.org (Cluster)TrainingRuntime: ``Failed`` with reason
   ``TrainingRuntimeNotSupported``.
4. Status from ``spec.suspend`` (``Suspended``: reason ``Suspended`` or, once resumed,
   ``Resumed``), then from what the status plugins observed (the JobSet's ``Complete``/``Failed``
   and ``jobsStatus``; a driver's own facts). A job that has just finished stops here.
5. ``activeDeadlineSeconds``: the clock runs from creation or the last resume and stops while the
   job is suspended. Past the deadline the job is ``Failed/DeadlineExceeded`` and its JobSet is
   deleted; before it, ``requeue_after`` is the time left.
6. Objects are built only when the JobSet is absent or suspended, or to suspend a running one: a
   running JobSet is never rewritten. They are built from the admission (``admit``: its runtime
   is the job's snapshot once that exists); the snapshot and the MPI Secret are applied only
   while absent. An admission with errors, or a job that cannot be built, becomes
   ``Created=False/JobsBuildFailed`` with the message.

The status plugins' derived statuses are merged in plugin order: each condition set as
Kubernetes sets one (``conditions.set_condition``), ``jobsStatus`` replaced.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

import trainer_api
from trainer_api import TrainJob, TrainJobStatus

from trainer_runtime import conditions, constants, framework
from trainer_runtime.admission import Admission
from trainer_runtime.conditions import find_condition, is_true, parse_time, set_condition
from trainer_runtime.errors import BuildError
from trainer_runtime.plan import ObjectRef, Observed, Plan
from trainer_runtime.registry import PLUGINS
from trainer_runtime.rendering import render
from trainer_runtime.settings import Settings
from trainer_runtime.snapshot import snapshot_name

__all__ = ["build", "is_finished"]


def is_finished(status: TrainJobStatus | Mapping[str, Any] | None) -> bool:
    """Whether a TrainJob status (the model or its dict) says Complete or Failed."""
    if isinstance(status, TrainJobStatus):
        status = status.to_dict()
    found = (status or {}).get("conditions")
    return is_true(found, conditions.COMPLETE) or is_true(found, conditions.FAILED)


def build(
    admission: Admission,
    observed: Observed,
    now: datetime,
    *,
    settings: Settings | None = None,
    plugins: Sequence[object] = PLUGINS,
) -> Plan:
    """What must exist for the admitted job and what its status is. No I/O, no clock, no
    randomness except ``settings.ssh_keypair``; nothing parsed, defaulted or validated again.

    ``admission``: the job (with its status as it is now) admitted against its runtime
    (``admit``). ``observed``: the owned objects as they are. ``now``: the driver's clock.
    ``plugins``: the plugins of every phase, in order (a driver may add its own status plugin).
    """
    trainjob = admission.job
    spec = trainjob.spec
    if spec.managed_by not in (None, "", trainer_api.DEFAULT_MANAGED_BY):
        return Plan()
    old_status = trainjob.status.to_dict() if trainjob.status is not None else {}
    if is_finished(old_status):
        return Plan()
    status: dict[str, Any] = copy.deepcopy(old_status)
    found = status.setdefault("conditions", [])

    ref = spec.runtime_ref
    kind = ref.kind or trainer_api.CLUSTER_TRAINING_RUNTIME_KIND
    group = ref.api_group or trainer_api.GROUP
    if kind not in constants.RUNTIME_KINDS or group != trainer_api.GROUP:
        message = (
            f"spec.runtimeRef: {group} {kind} {ref.name!r} is not supported; "
            f"expected apiGroup {trainer_api.GROUP} and kind "
            f"{' or '.join(constants.RUNTIME_KINDS)}"
        )
        set_condition(
            found, conditions.FAILED, True, conditions.REASON_RUNTIME_NOT_SUPPORTED, message, now
        )
        return Plan(status=_changed(old_status, status))

    suspended = bool(spec.suspend)
    _set_suspension(found, suspended, now)
    for derived in framework.run_status(trainjob, observed, now, plugins):
        _merge(status, derived, now)  # what was observed is more specific than the spec
    if is_finished(status):
        return Plan(status=_changed(old_status, status))

    jobset = observed.jobset_doc()
    requeue_after = None
    deadline = spec.active_deadline_seconds
    if deadline is not None and not suspended:
        expires = _clock_start(trainjob, found, now) + timedelta(seconds=deadline)
        if now >= expires:
            message = f"TrainJob ran longer than its activeDeadlineSeconds ({int(deadline)}s)"
            set_condition(
                found, conditions.FAILED, True, conditions.REASON_DEADLINE_EXCEEDED, message, now
            )
            delete = (_jobset_ref(jobset),) if jobset is not None else ()
            return Plan(delete=delete, status=_changed(old_status, status))
        requeue_after = expires - now

    jobset_suspended = bool((jobset or {}).get("spec", {}).get("suspend"))
    apply: tuple[dict[str, Any], ...] = ()
    build_error: BuildError | None = None
    if jobset is None or jobset_suspended or suspended:
        try:
            snapshot = observed.find("ConfigMap", snapshot_name(trainjob.metadata.name or ""))
            apply = tuple(render(admission, observed, settings, plugins, snapshot=snapshot is None))
        except BuildError as error:
            build_error = error
            set_condition(
                found, conditions.CREATED, False, conditions.REASON_BUILD_FAILED, str(error), now
            )
        else:
            set_condition(
                found,
                conditions.CREATED,
                True,
                conditions.REASON_JOBS_CREATED,
                conditions.MESSAGE_JOBS_CREATED,
                now,
            )
    return Plan(
        apply=apply,
        status=_changed(old_status, status),
        requeue_after=requeue_after,
        error=build_error,
    )


def _set_suspension(found: list[dict[str, Any]], suspended: bool, now: datetime) -> None:
    if suspended:
        reason, message = conditions.REASON_SUSPENDED, conditions.MESSAGE_SUSPENDED
    elif is_true(found, conditions.SUSPENDED):
        reason, message = conditions.REASON_RESUMED, conditions.MESSAGE_RESUMED
    else:
        return
    set_condition(found, conditions.SUSPENDED, suspended, reason, message, now)


def _merge(status: dict[str, Any], derived: TrainJobStatus, now: datetime) -> None:
    """Merge one status plugin's ``derived`` status into ``status`` (the wire form)."""
    if derived.jobs_status is not None:
        status["jobsStatus"] = [job.to_dict() for job in derived.jobs_status]
    for condition in derived.conditions or ():
        set_condition(
            status.setdefault("conditions", []),
            condition.type,
            condition.status == "True",
            condition.reason,
            condition.message,
            condition.last_transition_time or now,
        )


def _clock_start(job: TrainJob, found: Sequence[Mapping[str, Any]], now: datetime) -> datetime:
    start = parse_time(job.metadata.creation_timestamp) or now
    suspended = find_condition(found, conditions.SUSPENDED)
    if suspended is not None and suspended.get("reason") == conditions.REASON_RESUMED:
        resumed = parse_time(suspended.get("lastTransitionTime"))
        if resumed is not None and resumed > start:
            start = resumed
    return start


def _jobset_ref(jobset: Mapping[str, Any]) -> ObjectRef:
    metadata = jobset.get("metadata") or {}
    return ObjectRef(
        trainer_api.JOBSET_API_VERSION,
        "JobSet",
        metadata.get("name", ""),
        metadata.get("namespace"),
    )


def _changed(old: Mapping[str, Any], new: dict[str, Any]) -> TrainJobStatus | None:
    if not new.get("conditions"):
        new.pop("conditions", None)
    if new == old:
        return None
    return TrainJobStatus.model_validate(new)
