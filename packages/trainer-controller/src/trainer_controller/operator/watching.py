"""What the operator watches, and which keys each watch event queues (controller-runtime's
``Watches``): a TrainJob's event its own key; an owned object's (JobSet, ConfigMap, Secret,
PodGroup) its owner's; a runtime's the TrainJobs naming it, from an index kept here;
OptimizationJobs and their trials' events feed a second queue. Events only queue keys and refresh
the informer cache, so a burst of events for one TrainJob costs one reconcile.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

import trainer_api

from trainer_controller.operator.apiclient import KubeClient, object_path, resource_path
from trainer_controller.operator.informer import Handler, Informer, ObjectCache
from trainer_controller.operator.workqueue import WorkQueue

__all__ = [
    "OWNED_RESOURCES",
    "Watches",
    "optimization_owner_keys",
    "owner_keys",
    "runtime_path",
]

Key = tuple[str, str]
# (apiVersion, kind) of every kind a TrainJob can own; absent ones are simply not watched.
OWNED_RESOURCES: Final = (
    (trainer_api.JOBSET_API_VERSION, "JobSet"),
    ("v1", "ConfigMap"),
    ("v1", "Secret"),
    ("scheduling.x-k8s.io/v1alpha1", "PodGroup"),
    ("scheduling.volcano.sh/v1beta1", "PodGroup"),
)


def _owners(body: Mapping[str, Any], kind: str) -> Iterator[Key]:
    metadata = body.get("metadata") or {}
    for ref in metadata.get("ownerReferences") or ():
        if ref.get("kind") == kind and str(ref.get("apiVersion", "")).startswith(
            f"{trainer_api.GROUP}/"
        ):
            yield (metadata.get("namespace") or "", ref["name"])


def owner_keys(body: Mapping[str, Any]) -> Iterator[Key]:
    """The TrainJobs that own an object, from its ownerReferences."""
    return _owners(body, trainer_api.TRAIN_JOB_KIND)


def optimization_owner_keys(body: Mapping[str, Any]) -> Iterator[Key]:
    """The OptimizationJobs that own a TrainJob (its trials), from its ownerReferences."""
    return _owners(body, "OptimizationJob")


def runtime_path(job: Mapping[str, Any], namespace: object) -> str | None:
    """The API path of the runtime ``job`` references, or None when the reference is unusable
    (its rules then report it): only DNS-1123 names ever reach a URL."""
    spec = job.get("spec")
    ref = spec.get("runtimeRef") if isinstance(spec, Mapping) else None
    if not isinstance(ref, Mapping):
        return None
    kind, name = ref.get("kind") or "ClusterTrainingRuntime", ref.get("name")
    if not trainer_api.is_dns1123_subdomain(name):
        return None
    if kind == "ClusterTrainingRuntime":
        return resource_path(trainer_api.TRAINER_API_VERSION, kind, None, name)
    if kind == "TrainingRuntime" and trainer_api.is_dns1123_label(namespace):
        return resource_path(trainer_api.TRAINER_API_VERSION, kind, namespace, name)
    return None


def _key(body: Mapping[str, Any]) -> Key:
    return (body["metadata"]["namespace"], body["metadata"]["name"])


class Watches:
    """Event handlers that fill ``queue`` (and ``optimizations``) and ``cache``."""

    def __init__(
        self,
        queue: WorkQueue[Key],
        optimizations: WorkQueue[Key],
        cache: ObjectCache | None = None,
    ) -> None:
        self._queue, self._optimizations, self._cache = queue, optimizations, cache
        self._by_runtime: defaultdict[str, set[Key]] = defaultdict(set)  # by runtime path

    def informers(self, client: KubeClient, namespaces: Sequence[str]) -> list[Informer]:
        """One informer per watched collection: per namespace, or cluster-wide when none."""
        scopes: Sequence[str | None] = namespaces or (None,)
        watched: list[tuple[str, str, Handler, bool]] = [
            (trainer_api.TRAINER_API_VERSION, "TrainJob", self.trainjob, True),
            (trainer_api.TRAINER_API_VERSION, "OptimizationJob", self.optimization, True),
            (trainer_api.TRAINER_API_VERSION, "TrainingRuntime", self.runtime, True),
            (trainer_api.TRAINER_API_VERSION, "ClusterTrainingRuntime", self.runtime, False),
            *((version, kind, self.owned, True) for version, kind in OWNED_RESOURCES),
        ]
        return [
            Informer(client, resource_path(version, kind, scope), handle)
            for version, kind, handle, namespaced in watched
            for scope in (scopes if namespaced else (None,))
        ]

    def _observe(self, event_type: str | None, body: Mapping[str, Any]) -> None:
        if self._cache is not None:
            self._cache.observe(event_type, body)

    def trainjob(self, event_type: str | None, body: dict[str, Any]) -> None:
        self._observe(event_type, body)
        key = _key(body)
        for keys in self._by_runtime.values():
            keys.discard(key)
        if event_type != "DELETED":
            if (path := runtime_path(body, key[0])) is not None:
                self._by_runtime[path].add(key)
            self._queue.add(key)
        for owner in optimization_owner_keys(body):
            self._optimizations.add(owner)

    def optimization(self, event_type: str | None, body: dict[str, Any]) -> None:
        if event_type != "DELETED":
            self._optimizations.add(_key(body))

    def runtime(self, event_type: str | None, body: dict[str, Any]) -> None:
        """A runtime appeared or changed: the TrainJobs naming it get another pass (one that
        waited for a missing runtime now builds; running ones keep their snapshot)."""
        self._observe(event_type, body)
        for key in self._by_runtime.get(object_path(body), ()):
            self._queue.add(key)

    def owned(self, event_type: str | None, body: dict[str, Any]) -> None:
        owners = list(owner_keys(body))
        if owners:
            self._observe(event_type, body)
        for key in owners:
            self._queue.add(key)
