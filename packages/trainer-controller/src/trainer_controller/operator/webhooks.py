"""The admission webhook server: AdmissionReview v1 over HTTPS, decisions from ``admission``."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime, timezone
from typing import Any, Final

import trainer_api
from aiohttp import web
from trainer_runtime.admission import needs_jobset

from trainer_controller.operator import admission
from trainer_controller.operator.apiclient import KubeClient, resource_path
from trainer_controller.operator.metrics import OperatorMetrics

__all__ = ["WEBHOOK_PATHS", "webhook_routes"]

logger = logging.getLogger(__name__)

WEBHOOK_PATHS: Final = {
    "validate-trainjob": "/validate-trainer-kubeflow-org-v1alpha1-trainjob",
    "validate-trainingruntime": "/validate-trainer-kubeflow-org-v1alpha1-trainingruntime",
    "validate-clustertrainingruntime": (
        "/validate-trainer-kubeflow-org-v1alpha1-clustertrainingruntime"
    ),
    "mutate-trainjob": "/mutate-trainer-kubeflow-org-v1alpha1-trainjob",
}
_MAX_REVIEW_BYTES: Final = 3 * 1024 * 1024

Decide = Callable[[Mapping[str, Any]], Awaitable[dict[str, Any]]]


def webhook_routes(
    client: KubeClient,
    metrics: OperatorMetrics,
    clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
) -> list[web.RouteDef]:
    """The routes of the four webhooks."""

    async def runtime_of(job: Mapping[str, Any], namespace: str) -> dict[str, Any] | None:
        ref = (job.get("spec") or {}).get("runtimeRef") or {}
        kind = ref.get("kind") or "ClusterTrainingRuntime"
        if kind not in ("TrainingRuntime", "ClusterTrainingRuntime") or not ref.get("name"):
            return None
        return await client.get(
            resource_path(
                "trainer.kubeflow.org/v1alpha1",
                kind,
                namespace if kind == "TrainingRuntime" else None,
                ref["name"],
            )
        )

    async def jobset_of(job: Mapping[str, Any], namespace: str) -> dict[str, Any] | None:
        name = (job.get("metadata") or {}).get("name")
        if not name:
            return None
        return await client.get(
            resource_path(trainer_api.JOBSET_API_VERSION, "JobSet", namespace, name)
        )

    async def validate_trainjob(request: Mapping[str, Any]) -> dict[str, Any]:
        obj = request.get("object") or {}
        old = request.get("oldObject")
        namespace = request.get("namespace") or ""
        runtime = await runtime_of(obj, namespace)
        jobset = await jobset_of(obj, namespace) if needs_jobset(obj, old) else None
        return _verdict(
            request,
            admission.validation_errors(obj, old, runtime, jobset),
            admission.validation_warnings(runtime),
        )

    async def validate_runtime(request: Mapping[str, Any]) -> dict[str, Any]:
        return _verdict(
            request,
            admission.validation_errors(request.get("object") or {}, request.get("oldObject")),
        )

    async def mutate_trainjob(request: Mapping[str, Any]) -> dict[str, Any]:
        operations = admission.runtime_patch_times(
            request.get("object") or {}, request.get("oldObject"), clock()
        )
        return admission.patched(request.get("uid", ""), operations)

    def route(name: str, decide: Decide) -> web.RouteDef:
        async def handle(http: web.Request) -> web.Response:
            try:
                review = await http.json()
            except ValueError:
                return web.json_response(
                    {"message": "body: expected an AdmissionReview JSON object"}, status=400
                )
            request = review.get("request") if isinstance(review, Mapping) else None
            if review.get("kind") != "AdmissionReview" or not isinstance(request, Mapping):
                return web.json_response(
                    {"message": "body: expected kind AdmissionReview with a request"}, status=400
                )
            if request.get("operation") == "DELETE":
                answer = admission.allowed(request.get("uid", ""))
            else:
                answer = await decide(request)
            verdict = answer["response"]["allowed"]
            metrics.webhook_requests.labels(name, str(verdict).lower()).inc()
            return web.json_response(answer)

        return web.post(WEBHOOK_PATHS[name], handle)

    return [
        route("validate-trainjob", validate_trainjob),
        route("validate-trainingruntime", validate_runtime),
        route("validate-clustertrainingruntime", validate_runtime),
        route("mutate-trainjob", mutate_trainjob),
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
