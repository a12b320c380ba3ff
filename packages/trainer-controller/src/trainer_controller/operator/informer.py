"""Informers: each lists one collection and then watches it; their cache is read instead of the
API server.

Only presence is trusted: an object the cache lacks may not have been delivered yet (a fresh
leader), so the reconcile reads it from the API server before creating it (an SSH key must never
be made twice). The reconcile stores its own writes; a watch event older than what is stored
(by resourceVersion) does not replace it; an entry unrefreshed for ``max_age`` seconds is read
again, which bounds how long a deletion missed while reconnecting goes unnoticed. The cache also
answers which objects an owner has (by its uid), as controller-runtime's field indexers do.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

import aiohttp
import tenacity

from trainer_controller.operator.apiclient import ApiStatusError, KubeClient, object_path

__all__ = ["Handler", "Informer", "ObjectCache"]

logger = logging.getLogger(__name__)

_RECONNECT: Final = tenacity.wait_exponential(multiplier=0.1, max=30.0)
_FAILURES: Final = (ApiStatusError, aiohttp.ClientError, asyncio.TimeoutError, OSError)
_WATCH_SECONDS: Final = 300  # the API server ends a watch after this; it is then resumed

Handler = Callable[[str | None, dict[str, Any]], None]  # (event type, None when listed; object)


def _owner_uids(obj: Mapping[str, Any]) -> Iterator[str]:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("uid"):
            yield str(ref["uid"])


def _version(obj: Mapping[str, Any]) -> int | None:
    value = (obj.get("metadata") or {}).get("resourceVersion")
    return int(value) if isinstance(value, str) and value.isdigit() else None


class ObjectCache:
    """The newest copy of each object seen, keyed by its API path."""

    def __init__(self, max_age: float = 300.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._max_age, self._clock = max_age, clock
        self._objects: dict[str, tuple[float, dict[str, Any]]] = {}
        self._owned: defaultdict[str, set[str]] = defaultdict(set)  # owner uid -> paths

    def observe(self, event_type: str | None, body: Mapping[str, Any]) -> None:
        """Take a watch event (``None`` for objects listed when a watch starts)."""
        if event_type == "DELETED":
            self.forget(object_path(body))
        else:
            self.remember(body)

    def forget(self, path: str) -> None:
        _, stored = self._objects.pop(path, (0.0, None))
        for uid in _owner_uids(stored or {}):
            self._owned[uid].discard(path)

    def remember(self, obj: Mapping[str, Any]) -> None:
        """Store ``obj`` unless a newer version of it is already stored."""
        path = object_path(obj)
        _, stored = self._objects.get(path, (0.0, None))
        new, old = _version(obj), _version(stored) if stored is not None else None
        if stored is None or new is None or old is None or new >= old:
            self.forget(path)
            self._objects[path] = (self._clock(), copy.deepcopy(dict(obj)))
            for uid in _owner_uids(obj):
                self._owned[uid].add(path)

    def get(self, path: str) -> dict[str, Any] | None:
        """A copy of the stored object (the caller may change it); None when not seen lately."""
        stamp, stored = self._objects.get(path, (0.0, None))
        if stored is None or self._clock() - stamp > self._max_age:
            return None
        return copy.deepcopy(stored)

    def owned_by(self, uid: str) -> list[dict[str, Any]]:
        """Copies of the objects seen lately whose ownerReferences name ``uid``, by path."""
        found = (self.get(path) for path in sorted(self._owned.get(uid, ())))
        return [obj for obj in found if obj is not None]

    def __len__(self) -> int:
        return len(self._objects)


class Informer:
    """One collection's objects, listed and then watched, each handed to ``handle``.

    client-go's reflector loop: list (every object handed over with event type None), watch from
    the list's resourceVersion, and when the server ends the stream watch again from the last
    version seen; a version the server no longer keeps (410) lists again. A collection that is
    not served when first listed (404: its CRD is not installed) is not watched. Every other
    failure is retried after a back-off (0.1 s doubling to 30 s).
    """

    def __init__(self, client: KubeClient, path: str, handle: Handler) -> None:
        self._client, self._path, self._handle = client, path, handle
        self._version: str | None = None
        self._served = False

    async def run(self) -> None:
        """List and watch until cancelled; returns only when the collection is not served."""
        retrying = tenacity.AsyncRetrying(
            retry=tenacity.retry_if_exception_type(_FAILURES),
            wait=_RECONNECT,
            before_sleep=self._log_failure,
        )
        while await retrying(self._watch):
            pass

    async def _watch(self) -> bool:
        """List if need be, then watch until the server ends the stream: True; False when the
        collection is not served."""
        while True:
            try:
                if self._version is None:
                    self._version, self._served = await self._list(), True
                async for event_type, obj in self._client.watch(
                    self._path, self._version, _WATCH_SECONDS
                ):
                    self._version = obj["metadata"]["resourceVersion"]
                    if event_type != "BOOKMARK":
                        self._handle(event_type, obj)
                return True
            except ApiStatusError as error:
                if error.code == 404 and not self._served:
                    logger.info("not served, so not watched", extra={"path": self._path})
                    return False
                if error.code != 410:
                    raise
                self._version = None

    def _log_failure(self, state: tenacity.RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome is not None else None
        logger.warning(
            "watch failed; retrying",
            extra={
                "path": self._path,
                "retry_in_seconds": state.upcoming_sleep,
                "error": f"{type(error).__name__}: {error}",
            },
        )

    async def _list(self) -> str:
        """Hand every object over; the list's resourceVersion."""
        listed = await self._client.request("GET", self._path)
        kind = str(listed.get("kind", "")).removesuffix("List")
        for item in listed["items"]:  # items of a list may leave out their kind
            self._handle(None, {"apiVersion": listed.get("apiVersion"), "kind": kind, **item})
        return str(listed["metadata"]["resourceVersion"])
