"""The Kubernetes API stand-in over HTTP on loopback, for the ``kubernetes`` client, kubectl, kopf.

``ApiServer`` runs an aiohttp application in a background thread with its own event loop, so both
synchronous clients (kubectl in a subprocess, the ``kubernetes`` client) and an asyncio operator
under test can talk to it.
"""

from __future__ import annotations

import asyncio
import json
import threading
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

import yaml
from aiohttp import web

from kube_standin import resources, selectors
from kube_standin.store import ApiError, Store

__all__ = ["ApiServer", "TokenIdentity"]

T = TypeVar("T")
_PATCH_TYPES = {
    "application/merge-patch+json": "merge",
    "application/strategic-merge-patch+json": "merge",
    "application/json-patch+json": "json",
    "application/apply-patch+yaml": "apply",
    "application/apply-patch+cbor": "apply",
}
_DEFAULT_WATCH_SECONDS = 1800.0


@dataclass(frozen=True)
class TokenIdentity:
    """Who a bearer token belongs to, as a TokenReview reports it."""

    username: str
    audiences: tuple[str, ...] = ()
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, Sequence[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class _Target:
    rtype: resources.ResourceType
    namespace: str | None
    name: str | None
    subresource: str


def _json(data: Any, status: int = 200) -> web.Response:
    return web.Response(text=json.dumps(data), status=status, content_type="application/json")


def _error(error: ApiError) -> web.Response:
    return _json(error.to_status(), error.code)


class ApiServer:
    """A Kubernetes API stand-in on ``http://127.0.0.1:<port>`` (limits: see the README)."""

    def __init__(self, store: Store | None = None, watch_history: int = 200_000) -> None:
        self._store_arg = store
        self._history = watch_history
        self.reads: Counter[str] = Counter()  # GETs of one object, by plural
        self.tokens: dict[str, TokenIdentity] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._drop: asyncio.Event | None = None
        self.port = 0
        self.store: Store

    # -- lifecycle --------------------------------------------------------------------------------

    def __enter__(self) -> ApiServer:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        started: Future[None] = Future()
        self._loop = asyncio.new_event_loop()

        async def serve() -> None:
            self.store = self._store_arg or Store(history=self._history)
            self._drop = asyncio.Event()
            app = web.Application(client_max_size=16 * 1024 * 1024)
            app.router.add_route("*", "/{path:.*}", self._handle)
            self._runner = web.AppRunner(app, handle_signals=False, access_log=None)
            await self._runner.setup()
            site = web.TCPSite(self._runner, "127.0.0.1", 0)
            await site.start()
            self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

        def run() -> None:
            assert self._loop is not None
            asyncio.set_event_loop(self._loop)
            try:
                self._loop.run_until_complete(serve())
            except BaseException as error:  # reported to the starting thread
                started.set_exception(error)
                return
            started.set_result(None)
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, name="kube-api-standin", daemon=True)
        self._thread.start()
        started.result(timeout=30)

    def stop(self) -> None:
        if self._loop is None or self._thread is None:
            return
        if self._runner is not None:
            self.drop_watches()
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(timeout=30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)
        self._loop.close()
        self._loop = None

    def call(self, function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``function`` on the server's loop thread (the store is single-threaded)."""
        assert self._loop is not None, "the server is not running"

        async def invoke() -> T:
            return function(*args, **kwargs)

        return asyncio.run_coroutine_threadsafe(invoke(), self._loop).result(timeout=30)

    def drop_watches(self) -> None:
        """End every open watch stream now, as an API server restart or a load balancer would."""
        assert self._loop is not None

        def drop() -> None:
            assert self._drop is not None
            self._drop.set()
            self._drop = asyncio.Event()

        self._loop.call_soon_threadsafe(drop)

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float = 30.0,
    ) -> tuple[int, Any]:
        """One HTTP request to the stand-in: (status code, decoded JSON body)."""
        data = (
            None if body is None else (body if isinstance(body, str) else json.dumps(body)).encode()
        )
        request = urllib.request.Request(
            self.url + path, data=data, method=method, headers={"Content-Type": content_type}
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")

    def watch(self, path: str, timeout: float = 30.0) -> Iterator[dict[str, Any]]:
        """The events of a watch (``?watch=true`` is added) until the server ends the stream."""
        separator = "&" if "?" in path else "?"
        with urllib.request.urlopen(
            f"{self.url}{path}{separator}watch=true", timeout=timeout
        ) as response:
            for line in response:
                yield json.loads(line)

    def write_kubeconfig(self, path: Path, namespace: str = "default", token: str = "") -> Path:
        """A kubeconfig whose current context points at this server."""
        user: dict[str, Any] = {"token": token} if token else {}
        path.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "current-context": "standin",
                    "clusters": [{"name": "standin", "cluster": {"server": self.url}}],
                    "users": [{"name": "standin", "user": user}],
                    "contexts": [
                        {
                            "name": "standin",
                            "context": {
                                "cluster": "standin",
                                "user": "standin",
                                "namespace": namespace,
                            },
                        }
                    ],
                }
            )
        )
        return path

    # -- routing ----------------------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        parts = [part for part in request.path.split("/") if part]
        try:
            if (
                not parts
                or parts == ["version"]
                or parts[0] in ("openapi", "healthz", "livez", "readyz")
            ):
                return self._misc(parts)
            if parts[0] == "api":
                if len(parts) == 1:
                    return _json(
                        {
                            "kind": "APIVersions",
                            "versions": ["v1"],
                            "serverAddressByClientCIDRs": [
                                {
                                    "clientCIDR": "0.0.0.0/0",
                                    "serverAddress": f"127.0.0.1:{self.port}",
                                }
                            ],
                        }
                    )
                group, version, rest = "", parts[1], parts[2:]
            elif parts[0] == "apis":
                if len(parts) == 1:
                    return _json(self._group_list())
                if len(parts) == 2:
                    return _json(self._group(parts[1]))
                group, version, rest = parts[1], parts[2], parts[3:]
            else:
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            if not rest:
                return _json(self._resource_list(group, version))
            target = self._target(group, version, rest)
            return await self._serve(request, target)
        except ApiError as error:
            return _error(error)
        except selectors.InvalidSelectorError as error:
            return _error(ApiError(400, "BadRequest", str(error)))

    def _misc(self, parts: list[str]) -> web.Response:
        if parts == ["version"]:
            return _json(
                {
                    "major": "1",
                    "minor": "32",
                    "gitVersion": "v1.32.0-standin",
                    "platform": "linux/amd64",
                }
            )
        if parts and parts[0] in ("healthz", "livez", "readyz"):
            return web.Response(text="ok")
        if not parts:
            return _json({"paths": ["/api", "/apis", "/version"]})
        raise ApiError(404, "NotFound", "the stand-in serves no OpenAPI schemas")

    def _versions(self) -> dict[str, list[str]]:
        versions: dict[str, list[str]] = {}
        for rtype in self.store.types():
            if rtype.group and rtype.version not in versions.setdefault(rtype.group, []):
                versions[rtype.group].append(rtype.version)
        return versions

    def _group(self, group: str) -> dict[str, Any]:
        versions = self._versions().get(group)
        if not versions:
            raise ApiError(404, "NotFound", f"no API group {group!r}")
        entries = [
            {"groupVersion": f"{group}/{version}", "version": version} for version in versions
        ]
        return {
            "kind": "APIGroup",
            "apiVersion": "v1",
            "name": group,
            "versions": entries,
            "preferredVersion": entries[0],
        }

    def _group_list(self) -> dict[str, Any]:
        return {
            "kind": "APIGroupList",
            "apiVersion": "v1",
            "groups": [self._group(group) for group in sorted(self._versions())],
        }

    def _resource_list(self, group: str, version: str) -> dict[str, Any]:
        listed: list[dict[str, Any]] = []
        for rtype in self.store.types():
            if rtype.group_version != (group, version):
                continue
            listed.append(
                {
                    "name": rtype.plural,
                    "singularName": rtype.singular,
                    "namespaced": rtype.namespaced,
                    "kind": rtype.kind,
                    "verbs": list(rtype.verbs),
                    "shortNames": list(rtype.short_names),
                }
            )
            if rtype.status:
                listed.append(
                    {
                        "name": f"{rtype.plural}/status",
                        "singularName": "",
                        "namespaced": rtype.namespaced,
                        "kind": rtype.kind,
                        "verbs": ["get", "patch", "update"],
                    }
                )
        if not listed:
            raise ApiError(404, "NotFound", f"no API version {group}/{version}")
        return {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": f"{group}/{version}" if group else version,
            "resources": listed,
        }

    def _target(self, group: str, version: str, rest: list[str]) -> _Target:
        namespace: str | None = None
        if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] not in ("status", "finalize"):
            namespace, rest = rest[1], rest[2:]
        if len(rest) > 3:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        rtype = self.store.type_of(group, version, rest[0])
        subresource = rest[2] if len(rest) == 3 else ""
        if subresource and not (subresource == "status" and rtype.status):
            raise ApiError(404, "NotFound", f"no subresource {subresource!r} of {rtype.plural}")
        if namespace is not None and not rtype.namespaced:
            raise ApiError(404, "NotFound", f"{rtype.plural} is not namespaced")
        return _Target(rtype, namespace, rest[1] if len(rest) >= 2 else None, subresource)

    # -- verbs ------------------------------------------------------------------------------------

    async def _serve(self, request: web.Request, target: _Target) -> web.StreamResponse:
        store, query = self.store, request.query
        rtype, namespace, name = target.rtype, target.namespace or "", target.name
        if request.method == "GET" and name is None:
            if query.get("watch") in ("1", "true"):
                return await self._watch(request, target)
            items, version = store.list(
                rtype, target.namespace, query.get("labelSelector"), query.get("fieldSelector")
            )
            if "as=Table" in request.headers.get("Accept", ""):
                return _json(self._table(items, version))
            return _json(
                {
                    "kind": f"{rtype.kind}List",
                    "apiVersion": rtype.api_version,
                    "metadata": {"resourceVersion": version},
                    "items": items,
                }
            )
        if request.method == "GET" and name is not None:
            self.reads[rtype.plural] += 1
            obj = store.get(rtype, namespace, name)
            return _json(
                self._table([obj], str(store.resource_version))
                if "as=Table" in request.headers.get("Accept", "")
                else obj
            )
        body = await self._body(request)
        if request.method == "POST" and name is None:
            if rtype.plural == "tokenreviews":
                return _json(self._review_token(body), 201)
            return _json(store.create(rtype, namespace, body), 201)
        if name is None:
            raise ApiError(405, "MethodNotAllowed", f"{request.method} needs an object name")
        if request.method == "PUT":
            return _json(store.replace(rtype, namespace, name, body, target.subresource))
        if request.method == "PATCH":
            content_type = request.headers.get("Content-Type", "").split(";")[0].strip()
            if content_type not in _PATCH_TYPES:
                raise ApiError(
                    415,
                    "UnsupportedMediaType",
                    f"Content-Type {content_type!r} is not a patch type",
                )
            patch_type = _PATCH_TYPES[content_type]
            existed = store.exists(rtype, namespace, name)
            obj = store.patch(
                rtype,
                namespace,
                name,
                patch_type,
                body,
                target.subresource,
                query.get("fieldManager", ""),
                query.get("force") == "true",
            )
            return _json(obj, 200 if existed else 201)
        if request.method == "DELETE":
            options = body if isinstance(body, Mapping) else {}
            propagation = str(
                query.get("propagationPolicy") or options.get("propagationPolicy") or "Background"
            )
            precondition = (options.get("preconditions") or {}).get("resourceVersion")
            return _json(store.delete(rtype, namespace, name, propagation, precondition))
        raise ApiError(405, "MethodNotAllowed", f"{request.method} is not supported")

    async def _body(self, request: web.Request) -> Any:
        if not request.can_read_body:
            return {}
        text = await request.text()
        if not text.strip():
            return {}
        try:
            return (
                yaml.safe_load(text)
                if "yaml" in request.headers.get("Content-Type", "")
                else json.loads(text)
            )
        except (ValueError, yaml.YAMLError) as error:
            raise ApiError(
                400, "BadRequest", f"the request body does not parse: {error}"
            ) from error

    def _review_token(self, review: Mapping[str, Any]) -> dict[str, Any]:
        spec = review.get("spec") or {}
        identity = self.tokens.get(spec.get("token", ""))
        requested = list(spec.get("audiences") or [])
        status: dict[str, Any] = {"authenticated": False}
        if identity is None:
            status["error"] = "invalid bearer token"
        else:
            granted = (
                [audience for audience in requested if audience in identity.audiences]
                if requested
                else list(identity.audiences)
            )
            if requested and not granted:
                status["error"] = "token audiences do not match the requested audiences"
            else:
                status = {
                    "authenticated": True,
                    "audiences": granted,
                    "user": {
                        "username": identity.username,
                        "uid": identity.uid,
                        "groups": list(identity.groups),
                        "extra": {key: list(value) for key, value in identity.extra.items()},
                    },
                }
        return {
            "kind": "TokenReview",
            "apiVersion": "authentication.k8s.io/v1",
            "metadata": {},
            "spec": dict(spec),
            "status": status,
        }

    def _table(self, items: list[dict[str, Any]], version: str) -> dict[str, Any]:
        now = datetime.now(timezone.utc)

        def age(obj: Mapping[str, Any]) -> str:
            created = datetime.strptime(obj["metadata"]["creationTimestamp"], "%Y-%m-%dT%H:%M:%SZ")
            return f"{int((now - created.replace(tzinfo=timezone.utc)).total_seconds())}s"

        return {
            "kind": "Table",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": {"resourceVersion": version},
            "columnDefinitions": [
                {"name": "Name", "type": "string", "format": "name"},
                {"name": "Age", "type": "string", "format": ""},
            ],
            "rows": [
                {
                    "cells": [obj["metadata"]["name"], age(obj)],
                    "object": {
                        "kind": "PartialObjectMetadata",
                        "apiVersion": "meta.k8s.io/v1",
                        "metadata": obj["metadata"],
                    },
                }
                for obj in items
            ],
        }

    async def _watch(self, request: web.Request, target: _Target) -> web.StreamResponse:
        store, query = self.store, request.query
        assert self._drop is not None
        labels, fields = query.get("labelSelector"), query.get("fieldSelector")
        timeout = float(query.get("timeoutSeconds") or _DEFAULT_WATCH_SECONDS)
        requested = query.get("resourceVersion")
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)

        async def send(kind: str, obj: Mapping[str, Any]) -> None:
            await response.write(json.dumps({"type": kind, "object": obj}).encode() + b"\n")

        if not requested or requested == "0":
            items, version = store.list(target.rtype, target.namespace, labels, fields)
            for item in items:
                await send("ADDED", item)
            last = int(version)
        else:
            last = int(requested)
        wake, dropped = asyncio.Event(), self._drop
        unsubscribe = store.subscribe(wake.set)
        deadline = asyncio.get_running_loop().time() + timeout
        try:
            while not dropped.is_set():
                wake.clear()
                try:
                    events = list(store.events_since(last))
                except ApiError as error:
                    await send("ERROR", error.to_status())
                    break
                for event in events:
                    last = event.resource_version
                    if store.matches(event, target.rtype, target.namespace, labels, fields):
                        await send(
                            event.type, {**event.obj, "apiVersion": target.rtype.api_version}
                        )
                remaining = deadline - asyncio.get_running_loop().time()
                if remaining <= 0:
                    break
                waiters = [
                    asyncio.ensure_future(wake.wait()),
                    asyncio.ensure_future(dropped.wait()),
                ]
                _, pending = await asyncio.wait(
                    waiters, timeout=remaining, return_when=asyncio.FIRST_COMPLETED
                )
                for waiter in pending:
                    waiter.cancel()
        except ConnectionResetError:
            pass  # the client went away: the watch is over
        finally:
            unsubscribe()
        return response
