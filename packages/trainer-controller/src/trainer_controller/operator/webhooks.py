"""The admission webhook server: AdmissionReview v1 over HTTPS, decisions from ``admission``.

Bodies are read up to ``reviews.MAX_REVIEW_BYTES``; decoding, checking and validating them run
in an ``Offload`` (threads, bounded), never on the event loop; a full pool answers 429.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime, timezone
from typing import Any, Final

import trainer_api
from aiohttp import web
from trainer_runtime.admission import needs_jobset

from trainer_controller.operator import admission, reviews
from trainer_controller.operator.apiclient import KubeClient, resource_path
from trainer_controller.operator.metrics import OperatorMetrics
from trainer_controller.operator.offload import Busy, Offload
from trainer_controller.operator.servers import BodyTooLarge, read_body
from trainer_controller.operator.watching import runtime_path

__all__ = ["WEBHOOK_PATHS", "webhook_routes"]

logger = logging.getLogger(__name__)

WEBHOOK_PATHS: Final = {
    "validate-trainjob": "/validate-trainer-kubeflow-org-v1alpha1-trainjob",
    "validate-trainingruntime": "/validate-trainer-kubeflow-org-v1alpha1-trainingruntime",
    "validate-clustertrainingruntime": (
        "/validate-trainer-kubeflow-org-v1alpha1-clustertrainingruntime"
    ),
    "mutate-trainjob": "/mutate-trainer-kubeflow-org-v1alpha1-trainjob",
    "validate-optimizationjob": "/validate-trainer-kubeflow-org-v1alpha1-optimizationjob",
}

Decide = Callable[[Mapping[str, Any]], Awaitable[dict[str, Any]]]


def webhook_routes(
    client: KubeClient,
    metrics: OperatorMetrics,
    clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
    offload: Offload | None = None,
) -> list[web.RouteDef]:
    """The routes of the four webhooks; CPU-bound work runs in ``offload``."""
    pool = offload if offload is not None else Offload("admission")

    async def jobset_of(job: Mapping[str, Any], namespace: object) -> dict[str, Any] | None:
        name = (job.get("metadata") or {}).get("name")
        if not (trainer_api.is_dns1123_subdomain(name) and trainer_api.is_dns1123_label(namespace)):
            return None  # only DNS-1123 names ever reach a URL
        return await client.get(
            resource_path(trainer_api.JOBSET_API_VERSION, "JobSet", namespace, name)
        )

    async def validate_trainjob(request: Mapping[str, Any]) -> dict[str, Any]:
        obj = request["object"]
        old = request.get("oldObject")
        namespace = request.get("namespace")
        path = runtime_path(obj, namespace)
        runtime = await client.get(path) if path is not None else None
        jobset = await jobset_of(obj, namespace) if needs_jobset(obj, old) else None
        errors, warnings = await pool.run(admission.trainjob_admission, obj, old, runtime, jobset)
        return _verdict(request, errors, warnings)

    async def validate_runtime(request: Mapping[str, Any]) -> dict[str, Any]:
        errors = await pool.run(
            admission.validation_errors, request["object"], request.get("oldObject")
        )
        return _verdict(request, errors)

    async def mutate_trainjob(request: Mapping[str, Any]) -> dict[str, Any]:
        operations = admission.runtime_patch_times(
            request["object"], request.get("oldObject"), clock()
        )
        return admission.patched(request["uid"], operations)

    def route(name: str, kind: str, decide: Decide) -> web.RouteDef:
        async def handle(http: web.Request) -> web.Response:
            try:
                body = await read_body(http, reviews.MAX_REVIEW_BYTES)
                request = await pool.run(reviews.parse_review, body, kind)
            except BodyTooLarge as error:
                return web.json_response({"message": str(error)}, status=413)
            except Busy as error:
                return web.json_response({"message": str(error)}, status=429)
            except reviews.BadReview as error:
                if error.uid is None:
                    return web.json_response({"message": error.message}, status=400)
                metrics.webhook_requests.labels(name, "false").inc()
                return web.json_response(reviews.bad_request(error.uid, error.message))
            if request["operation"] in ("DELETE", "CONNECT"):
                answer = admission.allowed(request["uid"])
            else:
                try:
                    answer = await decide(request)
                except Busy as error:
                    return web.json_response({"message": str(error)}, status=429)
            verdict = answer["response"]["allowed"]
            metrics.webhook_requests.labels(name, str(verdict).lower()).inc()
            return web.json_response(answer)

        return web.post(WEBHOOK_PATHS[name], handle)

    return [
        route("validate-trainjob", "TrainJob", validate_trainjob),
        route("validate-trainingruntime", "TrainingRuntime", validate_runtime),
        route("validate-clustertrainingruntime", "ClusterTrainingRuntime", validate_runtime),
        route("mutate-trainjob", "TrainJob", mutate_trainjob),
        # The schema's rules (an update: the immutable spec) and the extension annotations.
        route("validate-optimizationjob", "OptimizationJob", validate_runtime),
    ]


def _verdict(
    request: Mapping[str, Any], errors: list[Any], warnings: list[str] | None = None
) -> dict[str, Any]:
    uid = request.get("uid", "")
    if not errors:
        return admission.allowed(uid, warnings or ())
    obj = request.get("object") or {}
    name = (obj.get("metadata") or {}).get("name") or request.get("name") or ""
    return admission.denied(
        uid,
        obj.get("kind") or (request.get("kind") or {}).get("kind", ""),
        name,
        errors,
        warnings or (),
    )
