"""The local backend's use of the runtime framework: the same ``build`` the operator calls.

Everything crossing into ``trainer_api`` and ``trainer_runtime`` is here, as manifest dicts in
and out, so that the rest of the backend deals in plain documents.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from trainer_sdk.errors import InvalidTrainJobError

if TYPE_CHECKING:
    from trainer_api import ApiObject, ClusterTrainingRuntime, TrainingRuntime, TrainJob

_logger = logging.getLogger(__name__)

__all__ = ["Planned", "builtin_runtime_manifests", "plan_trainjob", "trainjob_status"]


def _to_doc(obj: Any) -> dict[str, Any]:
    return dict(obj) if isinstance(obj, Mapping) else obj.to_dict()


def builtin_runtime_manifests() -> dict[str, dict[str, Any]]:
    """The built-in ClusterTrainingRuntimes, by name, as manifests."""
    import trainer_runtime

    return {name: _to_doc(runtime) for name, runtime in trainer_runtime.builtin_runtimes().items()}


class Planned:
    """The objects a Plan applies: the JobSet, and the others (snapshot ConfigMap, Secrets, ...)."""

    def __init__(self, objects: Sequence[Mapping[str, Any]]) -> None:
        jobsets = [dict(obj) for obj in objects if obj.get("kind") == "JobSet"]
        if len(jobsets) != 1:
            raise RuntimeError(
                f"the runtime framework planned {len(jobsets)} JobSets; expected exactly one"
            )
        self.jobset = jobsets[0]
        self.others = [dict(obj) for obj in objects if obj.get("kind") != "JobSet"]


def _parse(document: Mapping[str, Any], what: str | None = None) -> ApiObject:
    """The parsed object; its field errors as they are, or, for a runtime (``what``), with a
    message that names which object's fields they are."""
    import trainer_api

    try:
        return trainer_api.parse(dict(document))
    except trainer_api.ValidationError as error:
        if what is None:
            raise InvalidTrainJobError(error.errors) from None
        raise InvalidTrainJobError(
            [trainer_api.FieldError(item.field, f"{what}: {item.message}") for item in error.errors]
        ) from None


def _parse_trainjob(document: Mapping[str, Any]) -> TrainJob:
    import trainer_api

    parsed = _parse(document)
    if not isinstance(parsed, trainer_api.TrainJob):
        message = f"TrainJob: expected kind TrainJob, got {parsed.kind}"
        raise InvalidTrainJobError([trainer_api.FieldError("kind", message)])
    return parsed


def _parse_runtime(document: Mapping[str, Any]) -> TrainingRuntime | ClusterTrainingRuntime:
    import trainer_api

    what = str(document.get("kind", "runtime"))
    parsed = _parse(document, what)
    if not isinstance(parsed, (trainer_api.TrainingRuntime, trainer_api.ClusterTrainingRuntime)):
        message = f"{what}: expected kind TrainingRuntime or ClusterTrainingRuntime"
        raise InvalidTrainJobError([trainer_api.FieldError("kind", message)])
    return parsed


def plan_trainjob(
    trainjob: Mapping[str, Any], runtime: Mapping[str, Any], now: datetime
) -> Planned:
    """Validate the TrainJob against its runtime and build the objects that run it."""
    import trainer_api
    import trainer_runtime

    job = _parse_trainjob(trainjob)
    runtime_obj = _parse_runtime(runtime)
    if runtime_obj.spec.ml_policy is not None and runtime_obj.spec.ml_policy.flux is not None:
        # Its pods get Flux from an init container and start brokers that find each other by
        # host name: nothing this backend runs.
        raise InvalidTrainJobError(
            [
                trainer_api.FieldError(
                    "spec.runtimeRef.name",
                    f"{runtime_obj.kind} {runtime_obj.metadata.name!r} uses mlPolicy.flux, which "
                    "the local backend cannot run; submit the TrainJob to a Kubernetes cluster",
                )
            ]
        )
    # As the API server and its admission webhook would, once: defaulted, every rule checked
    # (runtimes labelled webhook-validation: disabled skip the job-against-runtime rules, as
    # upstream's cache runtime is), the runtime info computed for build.
    admission = trainer_runtime.admit(job, runtime_obj)
    if admission.errors:
        raise InvalidTrainJobError(admission.errors)
    for warning in admission.warnings:
        _logger.warning("Warning: %s", warning)  # what the cluster's admission webhook warns
    plan = trainer_runtime.build(admission, trainer_runtime.Observed(), now)
    if plan.error is not None:
        raise InvalidTrainJobError([trainer_api.FieldError("", str(plan.error))])
    return Planned([_to_doc(obj) for obj in plan.apply])


def trainjob_status(
    trainjob: Mapping[str, Any],
    runtime: Mapping[str, Any],
    jobset: Mapping[str, Any],
    others: Sequence[Mapping[str, Any]],
    now: datetime,
    previous: Mapping[str, Any] | None = None,
) -> dict[str, Any] | None:
    """The TrainJob status ``build`` derives from the observed JobSet (None: unchanged)."""
    import trainer_runtime

    job_doc = dict(trainjob)
    if previous:
        job_doc["status"] = dict(previous)
    observed = trainer_runtime.Observed(jobset=dict(jobset), objects=tuple(others))
    admission = trainer_runtime.admit(
        _parse_trainjob(job_doc), _parse_runtime(runtime), observed=observed
    )
    plan = trainer_runtime.build(admission, observed, now)
    return None if plan.status is None else _to_doc(plan.status)
