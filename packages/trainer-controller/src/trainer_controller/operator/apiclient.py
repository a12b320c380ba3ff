"""A small asyncio Kubernetes API client: the reads, writes and watches the operator makes,
rate-limited.

Errors carry the HTTP status; ``ApiStatusError.transient`` says whether a retry may succeed
(conflicts, throttling and server errors).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, Final, TypeVar

import aiohttp
import tenacity

from trainer_controller.operator.credentials import Credentials
from trainer_controller.operator.ratelimit import TokenBucket

__all__ = [
    "FIELD_MANAGER",
    "ApiStatusError",
    "KubeClient",
    "object_path",
    "plural_of",
    "resource_path",
    "retry_on_conflict",
]

T = TypeVar("T")

FIELD_MANAGER: Final = "trainer"
_TRANSIENT: Final = frozenset({409, 429, 500, 502, 503, 504})
_PLURALS: Final = {"Endpoints": "endpoints"}


class ApiStatusError(Exception):
    """The API server answered with an error status."""

    def __init__(self, code: int, reason: str, message: str, method: str, path: str) -> None:
        super().__init__(f"{method} {path}: {code} {reason}: {message}")
        self.code, self.reason, self.message = code, reason, message

    @property
    def transient(self) -> bool:
        return self.code in _TRANSIENT


async def retry_on_conflict(attempt: Callable[[], Awaitable[T]], attempts: int) -> T | None:
    """``attempt()``, run again while it fails with 409 Conflict (a read-modify-write whose object
    another writer changed reads it again, as client-go's ``RetryOnConflict``); None when all
    ``attempts`` conflicted."""
    retrying = tenacity.AsyncRetrying(
        retry=tenacity.retry_if_exception(
            lambda error: isinstance(error, ApiStatusError) and error.code == 409
        ),
        stop=tenacity.stop_after_attempt(attempts),
        retry_error_callback=lambda state: None,
    )
    return await retrying(attempt)


def plural_of(kind: str) -> str:
    """The resource name of a kind (``JobSet`` -> ``jobsets``)."""
    return _PLURALS.get(kind, kind.lower() + ("es" if kind.endswith("s") else "s"))


def resource_path(
    api_version: str,
    kind: str,
    namespace: str | None = None,
    name: str | None = None,
    subresource: str | None = None,
) -> str:
    """The URL path of a collection or object."""
    base = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
    parts = [base]
    if namespace:
        parts.append(f"namespaces/{namespace}")
    parts.append(plural_of(kind))
    if name:
        parts.append(name)
    if subresource:
        parts.append(subresource)
    return "/".join(parts)


def object_path(obj: Mapping[str, Any], namespace: str | None = None) -> str:
    """The URL path of a manifest's object (in ``namespace`` when the manifest names none)."""
    metadata = obj["metadata"]
    namespace = metadata.get("namespace") or namespace
    return resource_path(obj["apiVersion"], obj["kind"], namespace, metadata["name"])


class KubeClient:
    """Async JSON requests to the API server with the operator's credentials and rate limit."""

    def __init__(self, credentials: Credentials, qps: float = 50.0, burst: int = 100) -> None:
        self.credentials = credentials
        self._bucket, self._turn = TokenBucket(qps, burst), asyncio.Lock()
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> KubeClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(
                base_url=self.credentials.server,
                headers=self.credentials.headers(),
                connector=aiohttp.TCPConnector(ssl=self.credentials.ssl_context(), limit=64),
                timeout=aiohttp.ClientTimeout(total=60),
            )
        return self._session

    async def _throttle(self) -> None:
        """Wait, in turn, until the rate limit lets one more request go."""
        async with self._turn:
            while delay := self._bucket.take():
                await asyncio.sleep(delay)

    async def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = "application/json",
        params: Mapping[str, str] | None = None,
    ) -> Any:
        await self._throttle()
        data = None if body is None else json.dumps(body)
        async with self._open().request(
            method, path, data=data, params=params, headers={"Content-Type": content_type}
        ) as response:
            text = await response.text()
            if response.status >= 400:
                raise _status_error(response.status, text, method, path)
            return json.loads(text) if text else None

    async def watch(
        self, path: str, resource_version: str, timeout_seconds: int
    ) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        """The (type, object) events of a collection after ``resource_version``, until the server
        ends the stream; an ``ERROR`` event is raised as the ApiStatusError it carries (410: the
        version is too old, list again)."""
        await self._throttle()
        params = {
            "watch": "true",
            "resourceVersion": resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(timeout_seconds),
        }
        # No total deadline: the stream is meant to stay open; a silent one ends by sock_read.
        timeout = aiohttp.ClientTimeout(total=None, sock_read=timeout_seconds + 30)
        async with self._open().get(path, params=params, timeout=timeout) as response:
            if response.status >= 400:
                raise _status_error(response.status, await response.text(), "GET", path)
            pending = bytearray()  # objects can be larger than aiohttp's line limit
            async for chunk in response.content.iter_any():
                pending += chunk
                *lines, rest = pending.split(b"\n")
                pending = bytearray(rest)
                for line in lines:
                    if not line.strip():
                        continue
                    event = json.loads(line)
                    if event.get("type") == "ERROR":
                        status = event["object"]
                        code = int(status.get("code") or 500)
                        raise _status_error(code, json.dumps(status), "WATCH", path)
                    yield event["type"], event["object"]

    async def get(self, path: str) -> dict[str, Any] | None:
        """The object, or None when it does not exist."""
        try:
            return _as_object(await self.request("GET", path), "GET", path)
        except ApiStatusError as error:
            if error.code == 404:
                return None
            raise

    async def list(self, path: str, label_selector: str | None = None) -> list[dict[str, Any]]:
        params = {"labelSelector": label_selector} if label_selector else None
        return list((await self.request("GET", path, params=params))["items"])

    async def apply(
        self, manifest: Mapping[str, Any], subresource: str | None = None
    ) -> dict[str, Any]:
        """Server-side apply under field manager ``trainer``, taking ownership on conflicts."""
        path = object_path(manifest) + (f"/{subresource}" if subresource else "")
        applied = await self.request(
            "PATCH",
            path,
            manifest,
            "application/apply-patch+yaml",
            {"fieldManager": FIELD_MANAGER, "force": "true"},
        )
        return _as_object(applied, "PATCH", path)

    async def merge_patch(self, path: str, patch: Mapping[str, Any]) -> dict[str, Any]:
        patched = await self.request("PATCH", path, patch, "application/merge-patch+json")
        return _as_object(patched, "PATCH", path)

    async def create(self, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        return _as_object(await self.request("POST", path, body), "POST", path)

    async def replace(self, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        return _as_object(await self.request("PUT", path, body), "PUT", path)

    async def delete(self, path: str) -> None:
        try:
            await self.request("DELETE", path, {"propagationPolicy": "Background"})
        except ApiStatusError as error:
            if error.code != 404:
                raise


def _status_error(code: int, text: str, method: str, path: str) -> ApiStatusError:
    """The error of an answer with ``code``, from the Status object in ``text`` when it is one."""
    try:
        status = json.loads(text)
    except ValueError:
        status = None
    if not isinstance(status, Mapping):
        status = {}
    return ApiStatusError(code, status.get("reason", ""), status.get("message", text), method, path)


def _as_object(payload: Any, method: str, path: str) -> dict[str, Any]:
    """The JSON object the API server answered, or TypeError naming the request."""
    if not isinstance(payload, dict):
        raise TypeError(
            f"{method} {path}: expected a JSON object from the API server, "
            f"got {type(payload).__name__}"
        )
    return payload
