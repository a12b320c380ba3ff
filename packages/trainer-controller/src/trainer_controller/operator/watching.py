"""The kopf wiring: TrainJob events and owned-object events become keys in the work queue.

No create/update/delete handlers, daemons, timers or finalizers: only ``on.event``, which kopf
delivers for every watch event without storing anything on the objects, one in-memory index of
TrainJobs by the runtime they name, and (when given) the informer cache the reconcile reads. The
reconcile itself runs in the controller's workers, so a burst of events for one TrainJob costs one
reconcile.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

import kopf
import trainer_api

from trainer_controller.operator.credentials import Credentials
from trainer_controller.operator.informer import ObjectCache
from trainer_controller.operator.workqueue import WorkQueue

__all__ = [
    "OWNED_RESOURCES",
    "make_registry",
    "make_settings",
    "optimization_owner_keys",
    "owner_keys",
    "runtime_key",
]

Key = tuple[str, str]
RuntimeKey = tuple[str, str, str | None]
# (group, version, plural) of every kind a TrainJob can own; absent ones are simply not watched.
OWNED_RESOURCES: Final = (
    (trainer_api.JOBSET_GROUP, trainer_api.JOBSET_VERSION, "jobsets"),
    ("", "v1", "configmaps"),
    ("", "v1", "secrets"),
    ("scheduling.x-k8s.io", "v1alpha1", "podgroups"),
    ("scheduling.volcano.sh", "v1beta1", "podgroups"),
)


def owner_keys(body: Mapping[str, Any]) -> Iterator[Key]:
    """The TrainJobs that own an object, from its ownerReferences."""
    metadata = body.get("metadata") or {}
    for ref in metadata.get("ownerReferences") or ():
        if ref.get("kind") == trainer_api.TRAIN_JOB_KIND and str(
            ref.get("apiVersion", "")
        ).startswith(f"{trainer_api.GROUP}/"):
            yield (metadata.get("namespace") or "", ref["name"])


def runtime_key(trainjob: Mapping[str, Any]) -> RuntimeKey:
    """(kind, name, namespace or None) of the runtime a TrainJob names."""
    ref = (trainjob.get("spec") or {}).get("runtimeRef") or {}
    kind = ref.get("kind") or "ClusterTrainingRuntime"
    namespace = trainjob["metadata"].get("namespace") if kind == "TrainingRuntime" else None
    return (kind, ref.get("name") or "", namespace)


def _owned_by_trainjob(body: Mapping[str, Any], **_: Any) -> bool:
    return any(True for _ in owner_keys(body))


def optimization_owner_keys(body: Mapping[str, Any]) -> Iterator[Key]:
    """The OptimizationJobs that own a TrainJob (its trials), from its ownerReferences."""
    metadata = body.get("metadata") or {}
    for ref in metadata.get("ownerReferences") or ():
        if ref.get("kind") == "OptimizationJob" and str(ref.get("apiVersion", "")).startswith(
            f"{trainer_api.GROUP}/"
        ):
            yield (metadata.get("namespace") or "", ref["name"])


def make_registry(
    queue: WorkQueue[Key],
    credentials: Credentials,
    cache: ObjectCache | None = None,
    optimizations: WorkQueue[Key] | None = None,
) -> kopf.OperatorRegistry:
    """A fresh kopf registry (nothing registered at import time) feeding ``queue`` and ``cache``;
    OptimizationJobs, and the trials they own, feed ``optimizations`` when it is given."""
    registry = kopf.OperatorRegistry()

    def observe(event_type: str | None, body: Mapping[str, Any]) -> None:
        if cache is not None:
            cache.observe(event_type, body)

    @kopf.on.login(registry=registry)
    def login(**_: Any) -> kopf.ConnectionInfo:
        return credentials.to_connection_info()

    @kopf.on.event(trainer_api.GROUP, trainer_api.VERSION, "trainjobs", registry=registry)
    async def trainjob_changed(type: str | None, body: Mapping[str, Any], **_: Any) -> None:
        observe(type, body)
        if type != "DELETED":
            queue.add((body["metadata"]["namespace"], body["metadata"]["name"]))
        if optimizations is not None:
            for key in optimization_owner_keys(body):
                optimizations.add(key)

    if optimizations is not None:

        @kopf.on.event(
            trainer_api.GROUP, trainer_api.VERSION, "optimizationjobs", registry=registry
        )
        async def optimization_changed(type: str | None, body: Mapping[str, Any], **_: Any) -> None:
            if type != "DELETED" and optimizations is not None:
                optimizations.add((body["metadata"]["namespace"], body["metadata"]["name"]))

    @kopf.index(
        trainer_api.GROUP,
        trainer_api.VERSION,
        "trainjobs",
        registry=registry,
        id="trainjobs_by_runtime",
    )
    async def trainjobs_by_runtime(body: Mapping[str, Any], **_: Any) -> dict[RuntimeKey, Key]:
        metadata = body["metadata"]
        return {runtime_key(body): (metadata["namespace"], metadata["name"])}

    for plural, kind in (
        ("trainingruntimes", "TrainingRuntime"),
        ("clustertrainingruntimes", "ClusterTrainingRuntime"),
    ):

        @kopf.on.event(
            trainer_api.GROUP,
            trainer_api.VERSION,
            plural,
            registry=registry,
            id=f"runtime-{plural}",
            param=kind,
        )
        async def runtime_changed(
            type: str | None, body: Mapping[str, Any], param: Any = None, **kwargs: Any
        ) -> None:
            """A runtime appeared or changed: the TrainJobs naming it get another pass (one that
            waited for a missing runtime now builds; running ones keep their snapshot)."""
            observe(type, body)
            metadata = body["metadata"]
            namespace = metadata.get("namespace") if param == "TrainingRuntime" else None
            index: kopf.Index[RuntimeKey, Key] = kwargs["trainjobs_by_runtime"]
            for key in index.get((param, metadata["name"], namespace), ()):
                queue.add(key)

    for group, version, plural in OWNED_RESOURCES:

        @kopf.on.event(
            group,
            version,
            plural,
            registry=registry,
            when=_owned_by_trainjob,
            id=f"owned-{plural}.{group or 'core'}",
        )
        async def owned_changed(type: str | None, body: Mapping[str, Any], **_: Any) -> None:
            observe(type, body)
            for key in owner_keys(body):
                queue.add(key)

    return registry


def make_settings(server_timeout: float = 300.0) -> kopf.OperatorSettings:
    """kopf settings for a level-triggered controller that keeps its own leadership and events."""
    settings = kopf.OperatorSettings()
    settings.posting.enabled = False  # we post our own Events; kopf's per-handler ones are noise
    settings.scanning.disabled = (
        True  # resources are discovered once; no CRD watch permission needed
    )
    settings.peering.standalone = True  # leadership comes from our Lease
    settings.watching.server_timeout = server_timeout
    settings.watching.reconnect_backoff = 0.1
    return settings
