"""Admission decisions for AdmissionReview v1, as pure functions of the objects involved.

Validation uses ``trainer_api.validate`` on the defaulted object (as the API server would after
its own defaulting), with the old object on update; a TrainJob's rules, with its runtime and
JobSet, are ``trainer_runtime.admit``'s errors, the function the SDK's local backend calls
too, so both refuse the same jobs with the same field errors. The mutating
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
    "validation_errors",
    "validation_warnings",
]

ADMISSION_API_VERSION: Final = "admission.k8s.io/v1"


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


def validation_errors(
    obj: Mapping[str, Any],
    old: Mapping[str, Any] | None = None,
    runtime: Mapping[str, Any] | None = None,
    jobset: Mapping[str, Any] | None = None,
) -> list[trainer_api.FieldError]:
    """Every field error of ``obj`` (a TrainJob or runtime manifest); empty when it is valid.

    ``jobset``: the TrainJob's JobSet as it is, for an update that changes runtimePatches
    (``trainer_runtime.admission.needs_jobset`` says when the caller should read it).
    """
    try:
        typed = trainer_api.apply_defaults(trainer_api.parse(dict(obj), strict=True))
        typed_old = (
            trainer_api.apply_defaults(trainer_api.parse(dict(old), strict=False)) if old else None
        )
        typed_runtime = trainer_api.parse(dict(runtime), strict=False) if runtime else None
        if not isinstance(
            typed_runtime, (trainer_api.TrainingRuntime, trainer_api.ClusterTrainingRuntime)
        ):
            typed_runtime = None
    except trainer_api.ValidationError as error:
        return list(error.errors)
    if isinstance(typed, trainer_api.TrainJob):
        old_job = typed_old if isinstance(typed_old, trainer_api.TrainJob) else None
        return list(
            admit(typed, typed_runtime, old=old_job, observed=Observed(jobset=jobset)).errors
        )
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
