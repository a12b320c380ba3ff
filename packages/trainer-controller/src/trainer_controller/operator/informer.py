"""An informer cache: the objects the watches have delivered, read instead of the API server.

kopf's watches already bring every TrainJob, runtime and owned object to the operator; keeping
the newest copy of each lets a reconcile read from memory. Only presence is trusted: an object the
cache lacks may simply not have been delivered yet (a fresh leader, a just-created object), so
that read goes to the API server. This matters for objects whose absence triggers a creation,
like the SSH Secret, whose keys must never be generated twice. Objects the reconcile writes are
stored as the API server returned them, so the next pass sees its own writes; a watch event
older than what is stored (by resourceVersion) does not replace it. An entry not refreshed by an
event or a read for ``max_age`` seconds is read again (a resync), so a deletion the watches
missed, for instance while reconnecting, is noticed within that bound.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Mapping
from typing import Any

from trainer_controller.operator.apiclient import KubeClient, resource_path
from trainer_controller.operator.metrics import OperatorMetrics

__all__ = ["CachedReader", "ObjectCache"]


def _path_of(obj: Mapping[str, Any]) -> str:
    metadata = obj.get("metadata") or {}
    namespace, name = metadata.get("namespace"), metadata["name"]
    return resource_path(obj["apiVersion"], obj["kind"], namespace, name)


def _version(obj: Mapping[str, Any]) -> int | None:
    value = (obj.get("metadata") or {}).get("resourceVersion")
    return int(value) if isinstance(value, str) and value.isdigit() else None


class ObjectCache:
    """The newest copy of each object seen, keyed by its API path."""

    def __init__(self, max_age: float = 300.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._max_age, self._clock = max_age, clock
        self._objects: dict[str, tuple[float, dict[str, Any]]] = {}

    def observe(self, event_type: str | None, body: Mapping[str, Any]) -> None:
        """Take a watch event (``None`` for objects listed when a watch starts)."""
        if event_type == "DELETED":
            self.forget(_path_of(body))
        else:
            self.remember(body)

    def forget(self, path: str) -> None:
        self._objects.pop(path, None)

    def remember(self, obj: Mapping[str, Any]) -> None:
        """Store ``obj`` unless a newer version of it is already stored."""
        path = _path_of(obj)
        _, stored = self._objects.get(path, (0.0, None))
        new, old = _version(obj), _version(stored) if stored is not None else None
        if stored is None or new is None or old is None or new >= old:
            self._objects[path] = (self._clock(), copy.deepcopy(dict(obj)))

    def get(self, path: str) -> dict[str, Any] | None:
        """A copy of the stored object (the caller may change it); None when not seen lately."""
        stamp, stored = self._objects.get(path, (0.0, None))
        if stored is None or self._clock() - stamp > self._max_age:
            return None
        return copy.deepcopy(stored)

    def __len__(self) -> int:
        return len(self._objects)


class CachedReader:
    """Reads through an ``ObjectCache``, falling back to the API server for what it lacks."""

    def __init__(self, client: KubeClient, cache: ObjectCache, metrics: OperatorMetrics) -> None:
        self._client, self._cache, self._metrics = client, cache, metrics

    async def get(self, path: str) -> dict[str, Any] | None:
        """The object, or None when the API server says it does not exist."""
        cached = self._cache.get(path)
        if cached is not None:
            self._metrics.reads.labels("cache").inc()
            return cached
        self._metrics.reads.labels("api").inc()
        found = await self._client.get(path)
        if found is not None:
            self._cache.remember(found)
        return found

    def remember(self, obj: Mapping[str, Any]) -> None:
        """An object as the API server returned it from a write."""
        self._cache.remember(obj)

    def forget(self, path: str) -> None:
        """An object this operator deleted."""
        self._cache.forget(path)
