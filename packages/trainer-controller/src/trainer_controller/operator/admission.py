"""Admission decisions for AdmissionReview v1, as pure functions of the objects involved.

A TrainJob is admitted once, with its runtime and JobSet, by ``trainer_runtime.admit`` (the
function the SDK's local backend calls too, so both refuse the same jobs with the same field
errors), which gives its errors and warnings. Other kinds are checked with
``trainer_api.validate`` on the defaulted object (as the API server would after its own
defaulting), with the old object on update. The mutating
decision stamps ``spec.runtimePatches[].time`` on patches that are changed, or new without one.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, Final

import trainer_api
from trainer_runtime import Observed, admit, deprecation_warnings

__all__ = [
    "ADMISSION_API_VERSION",
    "allowed",
    "denied",
    "patched",
    "runtime_patch_times",
    "trainjob_admission",
    "validation_errors",
    "validation_warnings",
]

ADMISSION_API_VERSION: Final = "admission.k8s.io/v1"
_RUNTIME_TYPES: Final = (trainer_api.TrainingRuntime, trainer_api.ClusterTrainingRuntime)


def _response(uid: str, body: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": ADMISSION_API_VERSION,
        "kind": "AdmissionReview",
        "response": {"uid": uid, **body},
    }


def allowed(uid: str, warnings: Sequence[str] = ()) -> dict[str, Any]:
    """Allowed; ``warnings`` go to the client (kubectl prints them) when there are any."""
    return _response(uid, {"allowed": True, **({"warnings": list(warnings)} if warnings else {})})


def denied(
    uid: str,
    kind: str,
    name: str,
    errors: Sequence[trainer_api.FieldError],
    warnings: Sequence[str] = (),
) -> dict[str, Any]:
    """A denial whose message names every field path, as the API server shows it to the user."""
    message = f'{kind}.trainer.kubeflow.org "{name}" is invalid: ' + "; ".join(
        str(error) for error in errors
    )
    return _response(
        uid,
        {
            "allowed": False,
            "status": {
                "status": "Failure",
                "code": 422,
                "reason": "Invalid",
                "message": message,
                "details": {
                    "name": name,
                    "group": trainer_api.GROUP,
                    "kind": kind,
                    "causes": [
                        {
                            "reason": "FieldValueInvalid",
                            "field": error.field,
                            "message": error.message,
                        }
                        for error in errors
                    ],
                },
            },
            **({"warnings": list(warnings)} if warnings else {}),
        },
    )


def patched(uid: str, operations: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Allowed, with a JSON patch (omitted when empty)."""
    if not operations:
        return allowed(uid)
    return _response(
        uid,
        {
            "allowed": True,
            "patchType": "JSONPatch",
            "patch": base64.b64encode(json.dumps(list(operations)).encode()).decode(),
        },
    )


def trainjob_admission(
    obj: Mapping[str, Any],
    old: Mapping[str, Any] | None = None,
    runtime: Mapping[str, Any] | None = None,
    jobset: Mapping[str, Any] | None = None,
) -> tuple[list[trainer_api.FieldError], list[str]]:
    """Every field error of a TrainJob create (or update from ``old``) against ``runtime`` and
    ``jobset`` (read when ``trainer_runtime.admission.needs_jobset``), and the warnings: one
    ``trainer_runtime.admit``."""
    try:
        job = trainer_api.parse(dict(obj), strict=True)
        old_job = trainer_api.parse(dict(old), strict=False) if old else None
        typed_runtime = trainer_api.parse(dict(runtime), strict=False) if runtime else None
    except trainer_api.ValidationError as error:
        return list(error.errors), validation_warnings(runtime)
    if not isinstance(job, trainer_api.TrainJob):
        return [trainer_api.FieldError("kind", f"expected TrainJob, got {job.kind}")], []
    admission = admit(
        job,
        typed_runtime if isinstance(typed_runtime, _RUNTIME_TYPES) else None,
        old=old_job if isinstance(old_job, trainer_api.TrainJob) else None,
        observed=Observed(jobset=jobset),
    )
    return list(admission.errors), list(admission.warnings)


def validation_errors(
    obj: Mapping[str, Any],
    old: Mapping[str, Any] | None = None,
    runtime: Mapping[str, Any] | None = None,
    jobset: Mapping[str, Any] | None = None,
) -> list[trainer_api.FieldError]:
    """Every field error of ``obj`` (a TrainJob, runtime or OptimizationJob manifest); empty
    when it is valid. A TrainJob's are ``trainjob_admission``'s."""
    if obj.get("kind") == trainer_api.TRAIN_JOB_KIND:
        return trainjob_admission(obj, old, runtime, jobset)[0]
    try:
        typed = trainer_api.apply_defaults(trainer_api.parse(dict(obj), strict=True))
        typed_old = (
            trainer_api.apply_defaults(trainer_api.parse(dict(old), strict=False)) if old else None
        )
    except trainer_api.ValidationError as error:
        return list(error.errors)
    return trainer_api.validate(typed, old=typed_old)


def validation_warnings(runtime: Mapping[str, Any] | None) -> list[str]:
    """The admission warnings for a TrainJob referencing ``runtime`` (a deprecated runtime)."""
    return deprecation_warnings(runtime) if runtime else []


def _without_time(patch: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in patch.items() if key != "time"}


def runtime_patch_times(
    obj: Mapping[str, Any], old: Mapping[str, Any] | None, now: datetime
) -> list[dict[str, Any]]:
    """JSON patch operations setting ``time`` on the runtime patches that need one, as upstream.

    A patch the stored object has (same manager) keeps its stored time while its content is
    unchanged and gets ``now`` once changed; any other patch keeps the time the client set, and
    gets ``now`` only without one.
    """
    patches = (obj.get("spec") or {}).get("runtimePatches") or []
    previous = {
        patch.get("manager"): patch
        for patch in ((old or {}).get("spec") or {}).get("runtimePatches") or []
    }
    stamp = now.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    operations = []
    for index, patch in enumerate(patches):
        before = previous.get(patch.get("manager"))
        if before is None:
            wanted = patch.get("time") or stamp
        elif _without_time(before) == _without_time(patch):
            wanted = before.get("time") or stamp
        else:
            wanted = stamp
        if patch.get("time") != wanted:
            operations.append(
                {"op": "add", "path": f"/spec/runtimePatches/{index}/time", "value": wanted}
            )
    return operations
