"""The kopf wiring: TrainJob events and owned-object events become keys in the work queue.

No create/update/delete handlers, daemons, timers or finalizers: only ``on.event``, which kopf
delivers for every watch event without storing anything on the objects. The reconcile itself runs
in the controller's workers, so a burst of events for one TrainJob costs one reconcile.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

import kopf

from trainer_controller.operator.credentials import Credentials
from trainer_controller.operator.workqueue import WorkQueue

__all__ = ["OWNED_RESOURCES", "make_registry", "make_settings", "owner_keys"]

Key = tuple[str, str]
# (group, version, plural) of every kind a TrainJob can own; absent ones are simply not watched.
OWNED_RESOURCES: Final = (
    ("jobset.x-k8s.io", "v1alpha2", "jobsets"),
    ("", "v1", "configmaps"),
    ("", "v1", "secrets"),
    ("scheduling.x-k8s.io", "v1alpha1", "podgroups"),
    ("scheduling.volcano.sh", "v1beta1", "podgroups"),
)


def owner_keys(body: Mapping[str, Any]) -> Iterator[Key]:
    """The TrainJobs that own an object, from its ownerReferences."""
    metadata = body.get("metadata") or {}
    for ref in metadata.get("ownerReferences") or ():
        if ref.get("kind") == "TrainJob" and str(ref.get("apiVersion", "")).startswith(
            "trainer.kubeflow.org/"
        ):
            yield (metadata.get("namespace") or "", ref["name"])


def _owned_by_trainjob(body: Mapping[str, Any], **_: Any) -> bool:
    return any(True for _ in owner_keys(body))


def make_registry(queue: WorkQueue[Key], credentials: Credentials) -> kopf.OperatorRegistry:
    """A fresh kopf registry (nothing registered at import time) feeding ``queue``."""
    registry = kopf.OperatorRegistry()

    @kopf.on.login(registry=registry)
    def login(**_: Any) -> kopf.ConnectionInfo:
        return credentials.to_connection_info()

    @kopf.on.event("trainer.kubeflow.org", "v1alpha1", "trainjobs", registry=registry)
    async def trainjob_changed(type: str | None, body: Mapping[str, Any], **_: Any) -> None:
        if type != "DELETED":
            queue.add((body["metadata"]["namespace"], body["metadata"]["name"]))

    for group, version, plural in OWNED_RESOURCES:

        @kopf.on.event(
            group,
            version,
            plural,
            registry=registry,
            when=_owned_by_trainjob,
            id=f"owned-{plural}.{group or 'core'}",
        )
        async def owned_changed(body: Mapping[str, Any], **_: Any) -> None:
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
