"""``build``: one reconcile step of a TrainJob, as a pure function.

Decisions, in order:

1. ``spec.managedBy`` names another controller: nothing to do, no status.
2. The job is already Complete or Failed: nothing is built again (also when its JobSet is gone).
3. ``runtimeRef`` is not a trainer.kubeflow.org (Cluster)TrainingRuntime: ``Failed`` with reason
   ``TrainingRuntimeNotSupported``.
4. Status from the observed JobSet (``Complete``/``Failed``, ``jobsStatus``) and from
   ``spec.suspend`` (``Suspended``: reason ``Suspended`` or, once resumed, ``Resumed``).
   A job that has just finished stops here.
5. ``activeDeadlineSeconds``: the clock runs from creation or the last resume and stops while the
   job is suspended. Past the deadline the job is ``Failed/DeadlineExceeded`` and its JobSet is
   deleted; before it, ``requeue_after`` is the time left.
6. Objects are built only when the JobSet is absent or suspended, or to suspend a running one: a
   running JobSet is never rewritten. The runtime comes from the job's snapshot ConfigMap once
   that exists, else from the ``runtime`` argument. The snapshot and the MPI Secret are applied
   only while absent. A build error becomes ``Created=False/JobsBuildFailed`` with its message.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

import trainer_api
from trainer_api import TrainJob, TrainJobStatus

from trainer_runtime import conditions, constants, framework
from trainer_runtime.conditions import find_condition, is_true, parse_time, set_condition
from trainer_runtime.errors import BuildError
from trainer_runtime.inputs import RuntimeInput, TrainJobInput, as_trainjob
from trainer_runtime.plan import ObjectRef, Observed, Plan
from trainer_runtime.registry import PLUGINS
from trainer_runtime.rendering import render
from trainer_runtime.settings import Settings
from trainer_runtime.snapshot import from_snapshot, snapshot_name

__all__ = ["build", "is_finished"]


def is_finished(status: TrainJobStatus | Mapping[str, Any] | None) -> bool:
    """Whether a TrainJob status (the model or its dict) says Complete or Failed."""
    if isinstance(status, TrainJobStatus):
        status = status.to_dict()
    found = (status or {}).get("conditions")
    return is_true(found, conditions.COMPLETE) or is_true(found, conditions.FAILED)


def build(
    job: TrainJobInput,
    runtime: RuntimeInput | None,
    observed: Observed,
    now: datetime,
    *,
    settings: Settings | None = None,
    plugins: Sequence[object] = PLUGINS,
) -> Plan:
    """What must exist for ``job`` and what its status is. No I/O, no clock, no randomness
    except ``settings.ssh_keypair``.

    ``job``: a trainer_api TrainJob (or its manifest dict, parsed here once; one that does not
    parse raises InvalidTrainJobError). ``runtime``: the TrainingRuntime or
    ClusterTrainingRuntime its runtimeRef names (model or manifest dict), or None to use the
    job's runtime snapshot. ``observed``: the owned objects as they are. ``now``: the driver's
    clock.
    """
    trainjob = as_trainjob(job)
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

    framework.run_status(trainjob, observed, status, now, plugins)
    suspended = bool(spec.suspend)
    _set_suspension(found, suspended, now)
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
            apply = _objects(trainjob, runtime, observed, settings, plugins)
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


def _objects(
    job: TrainJob,
    runtime: RuntimeInput | None,
    observed: Observed,
    settings: Settings | None,
    plugins: Sequence[object],
) -> tuple[dict[str, Any], ...]:
    snapshot = observed.find("ConfigMap", snapshot_name(job.metadata.name or ""))
    if snapshot is not None:
        runtime = from_snapshot(snapshot)
    elif runtime is None:
        ref = job.spec.runtime_ref
        raise BuildError(
            f"{ref.kind or trainer_api.CLUSTER_TRAINING_RUNTIME_KIND} {ref.name!r} not found: "
            "create it, or point spec.runtimeRef at an existing runtime"
        )
    return tuple(render(job, runtime, observed, settings, plugins, snapshot=snapshot is None))


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
