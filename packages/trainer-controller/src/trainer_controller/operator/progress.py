"""The progress endpoint trainers post ``status.trainerStatus`` to from inside a training run.

``POST /apis/trainer.kubeflow.org/v1alpha1/namespaces/{ns}/trainjobs/{name}/status`` with a
projected service-account token whose audience is bound to that TrainJob. Answers: 200 with the
stored trainerStatus; 403 when the token is missing, invalid, for another job or from another
namespace; 404 when the TrainJob does not exist; 413 over 64 KiB; 422 when the body is not a valid
trainerStatus (the message names the field).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any, Final

import trainer_api
from aiohttp import web

from trainer_controller.operator.apiclient import ApiStatusError, KubeClient, resource_path
from trainer_controller.operator.metrics import OperatorMetrics
from trainer_controller.runtime.plugins.trainer_status import token_audience

__all__ = ["MAX_BODY_BYTES", "PROGRESS_PATH", "progress_routes", "trainer_status_errors"]

logger = logging.getLogger(__name__)

MAX_BODY_BYTES: Final = 64 * 1024
PROGRESS_PATH: Final = (
    "/apis/trainer.kubeflow.org/v1alpha1/namespaces/{namespace}/trainjobs/{name}/status"
)
_TRAINJOB: Final = "trainer.kubeflow.org/v1alpha1"
_SERVICE_ACCOUNT_PREFIX: Final = "system:serviceaccount:"
_WRITE_ATTEMPTS: Final = 5


def _answer(code: int, message: str, **extra: Any) -> web.Response:
    return web.json_response({"code": code, "message": message, **extra}, status=code)


def trainer_status_errors(
    job: Mapping[str, Any], trainer_status: Any
) -> list[trainer_api.FieldError]:
    """Problems with a reported trainerStatus, as field paths under ``trainerStatus``."""
    if not isinstance(trainer_status, Mapping):
        return [trainer_api.FieldError("trainerStatus", "required: an object")]
    # The job as it would be stored, reduced to what the reported status is checked against.
    candidate = {
        "apiVersion": _TRAINJOB,
        "kind": "TrainJob",
        "metadata": {"name": (job.get("metadata") or {}).get("name", "")},
        "spec": job.get("spec") or {},
        "status": {"trainerStatus": dict(trainer_status)},
    }
    try:
        found = trainer_api.validate(trainer_api.parse(candidate, strict=True))
    except trainer_api.ValidationError as error:  # unknown fields and wrong types
        found = list(error.errors)
    prefix = "status.trainerStatus"
    errors = [
        trainer_api.FieldError(error.field[len("status.") :], error.message)
        for error in found
        if error.field.startswith(prefix)
    ]
    return errors


async def _authorized(client: KubeClient, token: str, namespace: str, name: str) -> str | None:
    """None when the token may report for this job, else why not."""
    review = await client.create(
        "/apis/authentication.k8s.io/v1/tokenreviews",
        {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "spec": {"token": token, "audiences": [token_audience(namespace, name)]},
        },
    )
    status = review.get("status") or {}
    if not status.get("authenticated") or token_audience(namespace, name) not in (
        status.get("audiences") or []
    ):
        return "the token is not valid for this TrainJob (wrong audience, or rejected)"
    username = (status.get("user") or {}).get("username", "")
    if not username.startswith(_SERVICE_ACCOUNT_PREFIX) or username.split(":")[2] != namespace:
        return f"the token belongs to {username!r}, not a service account of {namespace!r}"
    return None


def progress_routes(client: KubeClient, metrics: OperatorMetrics) -> list[web.RouteDef]:
    """The one route of the progress endpoint."""

    async def handle(request: web.Request) -> web.Response:
        response = await _handle(request)
        metrics.progress_requests.labels(str(response.status)).inc()
        return response

    async def _handle(request: web.Request) -> web.Response:
        namespace, name = request.match_info["namespace"], request.match_info["name"]
        header = request.headers.get("Authorization", "")
        if not header.startswith("Bearer ") or not header[len("Bearer ") :].strip():
            return _answer(
                403, "Authorization: expected a Bearer token (the projected service-account token)"
            )
        if request.content_length is not None and request.content_length > MAX_BODY_BYTES:
            return _answer(413, f"body: at most {MAX_BODY_BYTES} bytes")
        body = await request.content.read(MAX_BODY_BYTES + 1)
        if len(body) > MAX_BODY_BYTES:
            return _answer(413, f"body: at most {MAX_BODY_BYTES} bytes")
        refusal = await _authorized(client, header[len("Bearer ") :].strip(), namespace, name)
        if refusal is not None:
            return _answer(403, refusal)
        path = resource_path(_TRAINJOB, "TrainJob", namespace, name)
        try:
            payload = json.loads(body)
        except ValueError as error:
            return _answer(422, f"body: not JSON ({error})")
        if not isinstance(payload, Mapping) or set(payload) - {"trainerStatus"}:
            return _answer(422, "body: expected an object with the single field trainerStatus")
        for _ in range(_WRITE_ATTEMPTS):
            job = await client.get(path)
            if job is None:
                return _answer(
                    404,
                    f'trainjobs.trainer.kubeflow.org "{name}" not found in namespace {namespace!r}',
                )
            errors = trainer_status_errors(job, payload.get("trainerStatus"))
            if errors:
                return _answer(
                    422,
                    "; ".join(map(str, errors)),
                    causes=[{"field": error.field, "message": error.message} for error in errors],
                )
            job["status"] = {**(job.get("status") or {}), "trainerStatus": payload["trainerStatus"]}
            try:
                stored = await client.replace(f"{path}/status", job)
            except ApiStatusError as error:
                if error.code == 409:
                    continue  # the reconcile wrote status meanwhile: read again
                raise
            metrics.writes.labels("progress").inc()
            return web.json_response(
                {"trainerStatus": (stored.get("status") or {}).get("trainerStatus")}
            )
        return _answer(409, "status kept changing while it was being written; retry")

    return [web.post(PROGRESS_PATH, handle)]
