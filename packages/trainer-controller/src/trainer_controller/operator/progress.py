"""The progress endpoint trainers post ``status.trainerStatus`` to from inside a training run.

``POST /apis/trainer.kubeflow.org/v1alpha1/namespaces/{ns}/trainjobs/{name}/status`` with a
projected service-account token whose audience is bound to that TrainJob. Answers: 200 with the
stored trainerStatus; 401 when the credential cannot be a token (not printable ASCII, as every
JWT is); 403 when the token is missing, invalid, for another job or from another namespace; 404
when the TrainJob does not exist (or the path cannot name one); 413 over 64 KiB, however the body
is chunked; 422 when the body is not a valid trainerStatus (the message names the field); 429
with ``Retry-After`` when a job reports faster than its limit, when tokens not seen before arrive
faster than TokenReviews are allowed (budgets per target TrainJob and source address, per source,
and in total, taken in that order so that a flood from one source for one job spends its own
budgets first), or when the validation pool is full. Decoding and validating run in an
``Offload``, off the event loop.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, Final

import trainer_api
from aiohttp import web
from trainer_runtime.plugins.trainer_status import token_audience

from trainer_controller.operator.apiclient import (
    KubeClient,
    resource_path,
    retry_on_conflict,
)
from trainer_controller.operator.metrics import OperatorMetrics
from trainer_controller.operator.offload import Busy, Offload
from trainer_controller.operator.ratelimit import KeyedLimiter, TokenBucket
from trainer_controller.operator.servers import BodyTooLarge, read_body

__all__ = [
    "MAX_BODY_BYTES",
    "PROGRESS_PATH",
    "AcceptedTokens",
    "ProgressLimits",
    "progress_routes",
    "trainer_status_errors",
]

logger = logging.getLogger(__name__)

MAX_BODY_BYTES: Final = 64 * 1024
PROGRESS_PATH: Final = (
    f"/apis/{trainer_api.TRAINER_API_VERSION}/namespaces/{{namespace}}/trainjobs/{{name}}/status"
)
_SERVICE_ACCOUNT_PREFIX: Final = "system:serviceaccount:"
_WRITE_ATTEMPTS: Final = 5


def _answer(code: int, message: str, **extra: Any) -> web.Response:
    return web.json_response({"code": code, "message": message, **extra}, status=code)


def _too_many(delay: float, what: str) -> web.Response:
    seconds = max(1, math.ceil(delay))
    response = _answer(429, f"{what}; retry in {seconds} s")
    response.headers["Retry-After"] = str(seconds)
    return response


class ProgressLimits:
    """How fast reports are taken: per TrainJob, and TokenReviews for tokens not yet accepted.

    A job's trainers may report ``per_job_qps`` times a second on average (bursts of
    ``per_job_burst``); every report costs a read and a status write. Tokens the endpoint has not
    accepted before cost a TokenReview each. Reviews are budgeted per (TrainJob, source
    address), then per source, then for the whole endpoint (so that a flood of bad tokens cannot
    load the API server), each smaller than the next: bogus tokens from one source spend that
    source's budgets, not another job's first report. Rates of 0 mean no limit.
    """

    def __init__(
        self,
        per_job_qps: float = 1.0,
        per_job_burst: int = 10,
        review_qps: float = 20.0,
        review_burst: int = 40,
        source_review_qps: float = 5.0,
        source_review_burst: int = 10,
        job_source_review_qps: float = 2.0,
        job_source_review_burst: int = 5,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.jobs = KeyedLimiter(per_job_qps, per_job_burst, clock=clock)
        self.job_source_reviews = KeyedLimiter(
            job_source_review_qps, job_source_review_burst, clock=clock
        )
        self.source_reviews = KeyedLimiter(source_review_qps, source_review_burst, clock=clock)
        self.reviews = TokenBucket(review_qps, review_burst, clock)

    def review_delay(self, namespace: str, name: str, source: str) -> tuple[float, str]:
        """0.0 and "" when a new token for ``namespace/name`` from ``source`` may be reviewed
        now, else the seconds to wait and whose budget is spent."""
        if delay := self.job_source_reviews.take((namespace, name, source)):
            return delay, f"too many new tokens to review for {namespace}/{name} from {source}"
        if delay := self.source_reviews.take(source):
            return delay, f"too many new tokens to review from {source}"
        if delay := self.reviews.take():
            return delay, "too many new tokens to review"
        return 0.0, ""


def trainer_status_errors(
    job: Mapping[str, Any], trainer_status: Any
) -> list[trainer_api.FieldError]:
    """Problems with a reported trainerStatus, as field paths under ``trainerStatus``."""
    if not isinstance(trainer_status, Mapping):
        return [trainer_api.FieldError("trainerStatus", "required: an object")]
    # The job as it would be stored, reduced to what the reported status is checked against.
    candidate = {
        "apiVersion": trainer_api.TRAINER_API_VERSION,
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


class AcceptedTokens:
    """Tokens a TokenReview accepted for a job, remembered for ``ttl`` seconds.

    A training job with many nodes reporting often would otherwise cost one TokenReview per
    report. Only acceptances are kept (a rejected token is reviewed again next time), by SHA-256
    digest rather than the token itself; a revoked token stays accepted for at most ``ttl``.
    """

    def __init__(
        self, ttl: float = 60.0, capacity: int = 10_000, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._ttl, self._capacity, self._clock = ttl, capacity, clock
        self._expiry: OrderedDict[tuple[str, str, str], float] = OrderedDict()

    @staticmethod
    def _key(token: str, namespace: str, name: str) -> tuple[str, str, str]:
        return (hashlib.sha256(token.encode("ascii")).hexdigest(), namespace, name)

    def __contains__(self, entry: tuple[str, str, str]) -> bool:
        key = self._key(*entry)
        expiry = self._expiry.get(key)
        if expiry is None or expiry <= self._clock():
            self._expiry.pop(key, None)
            return False
        return True

    def add(self, token: str, namespace: str, name: str) -> None:
        key = self._key(token, namespace, name)
        self._expiry[key] = self._clock() + self._ttl
        self._expiry.move_to_end(key)
        while len(self._expiry) > self._capacity:
            self._expiry.popitem(last=False)


def _bearer_token(header: str) -> str | web.Response:
    """The token of an ``Authorization: Bearer`` header, or the answer refusing the header.

    Header values arrive decoded as Latin-1 (or with surrogate escapes); a token is compared and
    digested as the bytes it is, and one that is not printable ASCII, which no service-account
    token is, gets 401 before anything compares or reviews it.
    """
    if not header.startswith("Bearer ") or not header[len("Bearer ") :].strip():
        return _answer(
            403, "Authorization: expected a Bearer token (the projected service-account token)"
        )
    token = header[len("Bearer ") :].strip()
    if not all(" " < character < "\x7f" for character in token):
        return _answer(401, "Authorization: the Bearer token must be printable ASCII")
    return token


def _decoded(body: bytes) -> Any:
    """The JSON value of ``body``; ValueError (also for nesting too deep to decode)."""
    try:
        return json.loads(body)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def progress_routes(
    client: KubeClient,
    metrics: OperatorMetrics,
    accepted: AcceptedTokens | None = None,
    limits: ProgressLimits | None = None,
    offload: Offload | None = None,
) -> list[web.RouteDef]:
    """The one route of the progress endpoint; decoding and validation run in ``offload``."""
    accepted = accepted if accepted is not None else AcceptedTokens()
    limits = limits if limits is not None else ProgressLimits()
    pool = offload if offload is not None else Offload("progress")

    async def handle(request: web.Request) -> web.Response:
        try:
            response = await _handle(request)
        except Busy as error:
            response = _too_many(1, str(error))
        metrics.progress_requests.labels(str(response.status)).inc()
        return response

    async def _handle(request: web.Request) -> web.Response:
        namespace, name = request.match_info["namespace"], request.match_info["name"]
        token = _bearer_token(request.headers.get("Authorization", ""))
        if isinstance(token, web.Response):
            return token
        if not trainer_api.is_dns1123_label(namespace):
            return _answer(404, f"namespace {namespace!r} cannot exist: not a DNS-1123 label")
        if not trainer_api.is_dns1123_label(name):
            return _answer(404, f"TrainJob {name!r} cannot exist: not a DNS-1123 label")
        try:
            body = await read_body(request, MAX_BODY_BYTES)
        except BodyTooLarge as error:
            return _answer(413, str(error))
        if (token, namespace, name) not in accepted:
            delay, spent = limits.review_delay(namespace, name, request.remote or "unknown")
            if delay:
                return _too_many(delay, spent)
            refusal = await _authorized(client, token, namespace, name)
            if refusal is not None:
                return _answer(403, refusal)
            accepted.add(token, namespace, name)
        if delay := limits.jobs.take((namespace, name)):
            return _too_many(delay, f"TrainJob {namespace}/{name} reports too often")
        path = resource_path(trainer_api.TRAINER_API_VERSION, "TrainJob", namespace, name)
        try:
            payload = await pool.run(_decoded, body)
        except ValueError as error:
            return _answer(422, f"body: not JSON ({error})")
        if not isinstance(payload, Mapping) or set(payload) - {"trainerStatus"}:
            return _answer(422, "body: expected an object with the single field trainerStatus")

        async def write() -> web.Response:
            job = await client.get(path)
            if job is None:
                return _answer(
                    404,
                    f'trainjobs.trainer.kubeflow.org "{name}" not found in namespace {namespace!r}',
                )
            errors = await pool.run(trainer_status_errors, job, payload.get("trainerStatus"))
            if errors:
                return _answer(
                    422,
                    "; ".join(map(str, errors)),
                    causes=[{"field": error.field, "message": error.message} for error in errors],
                )
            job["status"] = {**(job.get("status") or {}), "trainerStatus": payload["trainerStatus"]}
            stored = await client.replace(f"{path}/status", job)
            metrics.writes.labels("progress").inc()
            return web.json_response(
                {"trainerStatus": (stored.get("status") or {}).get("trainerStatus")}
            )

        answer = await retry_on_conflict(write, _WRITE_ATTEMPTS)  # the reconcile writes status too
        if answer is None:
            return _answer(409, "status kept changing while it was being written; retry")
        return answer

    return [web.post(PROGRESS_PATH, handle)]
