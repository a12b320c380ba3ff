"""The HTTP(S) listeners: health probes, metrics, webhooks and the progress endpoint."""

from __future__ import annotations

import ssl
from collections.abc import Awaitable, Callable, Sequence

from aiohttp import web

from trainer_controller.operator.metrics import OperatorMetrics

__all__ = ["BodyTooLarge", "Listener", "health_routes", "metrics_routes", "read_body"]


class BodyTooLarge(Exception):
    """A request body is larger than the endpoint takes."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"body: at most {limit} bytes")
        self.limit = limit


async def read_body(request: web.Request, limit: int) -> bytes:
    """The whole body, however it is chunked; ``BodyTooLarge`` past ``limit`` bytes.

    A declared ``Content-Length`` over the limit is refused before anything is read; otherwise
    reading stops as soon as the limit is passed.
    """
    if request.content_length is not None and request.content_length > limit:
        raise BodyTooLarge(limit)
    chunks: list[bytes] = []
    size = 0
    while chunk := await request.content.read(64 * 1024):
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(limit)
        chunks.append(chunk)
    return b"".join(chunks)


def health_routes(alive: Callable[[], bool], ready: Callable[[], bool]) -> list[web.RouteDef]:
    """``/healthz`` (liveness) and ``/readyz`` (readiness): 200 or 503."""

    def probe(check: Callable[[], bool]) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def handle(_: web.Request) -> web.Response:
            if check():
                return web.Response(text="ok")
            return web.Response(status=503, text="not ready")

        return handle

    return [web.get("/healthz", probe(alive)), web.get("/readyz", probe(ready))]


def metrics_routes(metrics: OperatorMetrics) -> list[web.RouteDef]:
    async def handle(_: web.Request) -> web.Response:
        return web.Response(body=metrics.exposition(), content_type="text/plain", charset="utf-8")

    return [web.get("/metrics", handle)]


class Listener:
    """One aiohttp site serving routes on host:port (0: a free port), with optional TLS."""

    def __init__(
        self,
        routes: Sequence[web.RouteDef],
        host: str,
        port: int,
        tls: ssl.SSLContext | None = None,
        max_body: int = 4 * 1024 * 1024,
    ) -> None:
        self._app = web.Application(client_max_size=max_body)
        self._app.add_routes(routes)
        self._host, self._port, self._tls = host, port, tls
        self._runner: web.AppRunner | None = None
        self.port = port

    async def start(self) -> None:
        # A refused request's unread body is drained for at most a second (aiohttp: 10 s), so
        # that clients declaring bodies they never send cannot hold connections or shutdown.
        self._runner = web.AppRunner(
            self._app, handle_signals=False, access_log=None, lingering_time=1.0
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, self._host, self._port, ssl_context=self._tls)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
