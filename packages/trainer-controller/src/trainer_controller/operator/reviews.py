"""Reading an AdmissionReview v1 request, refusing anything that is not one.

Every check here runs before any admission decision: the body is JSON (at most
``MAX_REVIEW_BYTES``; nesting bounded as trainer_api bounds it), an object of kind
``AdmissionReview`` and apiVersion ``admission.k8s.io/v1`` whose ``request`` has a uid and a
known operation; on CREATE and UPDATE its ``object`` (and on UPDATE its ``oldObject``) is an
object of the kind the webhook serves, under ``trainer.kubeflow.org/v1alpha1``, that parses as
that kind. A review that cannot be answered (no uid) is refused with HTTP 400; one that can is
denied with code 400, so that the API server shows the user why. Nothing malformed is allowed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

import trainer_api

from trainer_controller.operator.admission import ADMISSION_API_VERSION

__all__ = ["MAX_REVIEW_BYTES", "BadReview", "bad_request", "parse_review"]

MAX_REVIEW_BYTES: Final = 3 * 1024 * 1024
"""The API server sends objects of at most 3 MiB (its request limit); a review is refused above."""

_OPERATIONS: Final = frozenset({"CREATE", "UPDATE", "DELETE", "CONNECT"})


class BadReview(Exception):
    """The body is not an AdmissionReview this webhook can decide; ``uid`` when it had one."""

    def __init__(self, message: str, uid: str | None = None) -> None:
        super().__init__(message)
        self.message, self.uid = message, uid


def parse_review(body: bytes, kind: str) -> dict[str, Any]:
    """The ``request`` of the AdmissionReview in ``body``, checked for a webhook of ``kind``.

    CPU-bound on large bodies: run it off the event loop. Raises ``BadReview``.
    """
    if len(body) > MAX_REVIEW_BYTES:
        raise BadReview(f"body: at most {MAX_REVIEW_BYTES} bytes")
    try:
        review = json.loads(body)
    except (ValueError, RecursionError) as error:
        raise BadReview(f"body: not JSON ({type(error).__name__})") from None
    if not isinstance(review, dict):
        raise BadReview(f"body: expected an AdmissionReview object, got {_json_type(review)}")
    if review.get("kind") != "AdmissionReview" or review.get("apiVersion") != (
        ADMISSION_API_VERSION
    ):
        raise BadReview(f"body: expected kind AdmissionReview, apiVersion {ADMISSION_API_VERSION}")
    request = review.get("request")
    if not isinstance(request, dict):
        raise BadReview(f"request: expected an object, got {_json_type(request)}")
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid:
        raise BadReview("request.uid: expected a non-empty string")
    operation = request.get("operation")
    if operation not in _OPERATIONS:
        raise BadReview(f"request.operation: expected one of {sorted(_OPERATIONS)}", uid)
    if not isinstance(request.get("namespace", ""), str):
        raise BadReview("request.namespace: expected a string", uid)
    if operation in ("CREATE", "UPDATE"):
        _check_object(request.get("object"), "request.object", kind, uid)
    if operation == "UPDATE":
        _check_object(request.get("oldObject"), "request.oldObject", kind, uid)
    elif request.get("oldObject") is not None and operation != "DELETE":
        raise BadReview(f"request.oldObject: expected null on {operation}", uid)
    return request


def bad_request(uid: str, message: str) -> dict[str, Any]:
    """The answer to a review that is well addressed but malformed: denied, code 400."""
    status = {"status": "Failure", "code": 400, "reason": "BadRequest", "message": message}
    return {
        "apiVersion": ADMISSION_API_VERSION,
        "kind": "AdmissionReview",
        "response": {"uid": uid, "allowed": False, "status": status},
    }


def _check_object(obj: object, field: str, kind: str, uid: str) -> None:
    if not isinstance(obj, Mapping):
        raise BadReview(f"{field}: expected a {kind} object, got {_json_type(obj)}", uid)
    if obj.get("kind") != kind or obj.get("apiVersion") != trainer_api.TRAINER_API_VERSION:
        raise BadReview(
            f"{field}: this webhook admits {trainer_api.TRAINER_API_VERSION} {kind}, got "
            f"{obj.get('apiVersion')!r} {obj.get('kind')!r}",
            uid,
        )
    try:  # the types only (unknown fields kept): the validating webhooks check the rest
        trainer_api.parse(obj, strict=False)
    except trainer_api.ValidationError as error:
        raise BadReview(f"{field}: " + "; ".join(map(str, error.errors)), uid) from None


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    return {dict: "object", list: "array", str: "string", bool: "boolean"}.get(
        type(value), "number"
    )
