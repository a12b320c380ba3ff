"""``trainer ui``'s HTTP server (aiohttp): the page, its assets, and a JSON API over
``TrainerClient``.

GET  /                                  the app (hash routes: #/, #/jobs/NAME, #/runtimes)
GET  /static/...                        its JavaScript, CSS, icon and the vendored uPlot
GET  /favicon.ico                       the icon (an SVG), for clients that ask there
GET  /api/info                          backend, what this server may do
GET  /api/jobs?q=&status=&sort=&order=&offset=&limit=
                                        the job list, newest first (X-Total-Count, weak ETag)
GET  /api/jobs/NAME                     one job: steps, conditions, events, TrainJob/JobSet YAML
GET  /api/jobs/NAME/metrics             its metric history, per metric and rank
GET  /api/jobs/NAME/resources           a local job's CPU and memory, per pod (as sampled)
GET  /api/jobs/NAME/logs?step=S         a step's log as text (``&download=1``: as a file;
                                        ``&start=A&count=N``: its lines A to A+N-1, from 0)
GET  /api/jobs/NAME/logs/search?step=S&q=TEXT  the lines holding TEXT (any case), numbered
GET  /api/jobs/NAME/logs/stream?step=S  the same as server-sent events, following until the end
                                        (``&tail=N``: from the last N lines; a first ``skipped``
                                        event says how many came before them)
POST /api/jobs/NAME/stop                end its processes, keep it (local backend)
POST /api/jobs/NAME/delete              delete it
GET  /api/runtimes                      the runtimes and what each builds
GET  /api/optimizations[/NAME]          optimization jobs and their trials (optimization.py)
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import json
import logging
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from http import HTTPStatus
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeVar

from aiohttp import web

from trainer_sdk import constants
from trainer_sdk.client import TrainerClient
from trainer_sdk.errors import JobNotFoundError, TrainerError
from trainer_sdk.status.jobs import finished_at
from trainer_sdk.training.metrics import MetricPoint
from trainer_sdk.types import TrainJob
from trainer_sdk.ui import logstream, resources, strict_json, views
from trainer_sdk.ui.access import COOKIE_NAME, Access
from trainer_sdk.ui.connections import DEFAULT_LIMITS, ConnectionLimits
from trainer_sdk.ui.joblist import JobList
from trainer_sdk.ui.observed import DEFAULT_RETENTION_DAYS, ObservedHistory

if TYPE_CHECKING:
    from trainer_sdk.optimizer import OptimizerClient
    from trainer_sdk.ui.optimization import OptimizationViews

__all__ = ["STATIC_DIR", "UiServer"]

STATIC_DIR: Final = Path(__file__).parent / "static"
_CHUNK_BYTES: Final = 64 * 1024
_CLOCK_FIELDS: Final = frozenset({"age", "duration"})
_FAILURES_KEPT: Final = 256  # failed jobs whose cause the server keeps rather than re-reads
_CLOSE_SECONDS: Final = 1.0  # answers still running when the server closes get this long
SAMPLE_SECONDS: Final = 5.0  # how often a cluster's running jobs are sampled into the history
RESOURCE_SECONDS: Final = 2.0  # how often the local running jobs' pods are sampled
_SAMPLED: Final = frozenset({constants.TRAINJOB_CREATED, constants.TRAINJOB_RUNNING})
_SECURITY_HEADERS: Final = {
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:",
}
_logger = logging.getLogger(__name__)
_T = TypeVar("_T")
_Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _now() -> datetime:
    return datetime.now(timezone.utc)


class _ApiError(Exception):
    """An answer other than 200, with the reason shown to the user."""

    def __init__(self, status: HTTPStatus, message: str) -> None:
        super().__init__(message)
        self.status = status


class UiServer:
    """Serves the UI for ``client`` on ``access.host``:``port`` (0: any free port); a cluster's
    metric history is kept in ``history`` (SQLite; None: in memory) for ``retention_days``; the
    optimization pages show ``optimizer``'s jobs (made on first use; None: there are none).
    Driven like ``socketserver``: ``serve_forever()`` in one thread, ``shutdown()`` from another,
    then ``server_close()``."""

    def __init__(
        self,
        client: TrainerClient,
        access: Access,
        port: int = 0,
        allow_delete: bool = True,
        clock: Callable[[], datetime] = _now,
        limits: ConnectionLimits = DEFAULT_LIMITS,
        history: Path | None = None,
        retention_days: float = DEFAULT_RETENTION_DAYS,
        optimizer: Callable[[], OptimizerClient] | None = None,
    ) -> None:
        self.client, self.access, self.allow_delete, self.clock, self.limits = (
            client,
            access,
            allow_delete,
            clock,
            limits,
        )
        # a backend that keeps every point (locally, the job's own metric files) is the history
        keeps = client.backend.keeps_metric_history
        self.observed = ObservedHistory(None if keeps else history, retention_days)
        self.resources = resources.ResourceHistory()
        self._closed = threading.Event()
        self._failures: dict[tuple[str, datetime], dict[str, Any]] = {}
        self.job_list = JobList(client)
        self._optimizer = optimizer
        family = socket.AF_INET6 if ":" in access.host else socket.AF_INET
        try:
            listener = socket.create_server((access.host, port), family=family)
        except OSError:
            self.observed.close()
            raise
        self.server_address: tuple[Any, ...] = listener.getsockname()
        self._pool = ThreadPoolExecutor(limits.max_connections, thread_name_prefix="ui")
        self._loop = asyncio.new_event_loop()
        self._stopping = asyncio.Event()
        self._served = threading.Event()
        self._runner = web.AppRunner(
            self._app(),
            handle_signals=False,
            access_log=None,
            keepalive_timeout=limits.header_seconds,
            shutdown_timeout=_CLOSE_SECONDS,
        )
        self._loop.run_until_complete(self._runner.setup())
        self._loop.run_until_complete(web.SockSite(self._runner, listener).start())
        threading.Thread(target=self._sample, name="ui-sampler", daemon=True).start()

    @property
    def url(self) -> str:
        host, port = str(self.access.host), self.server_address[1]
        shown = f"[{host}]" if ":" in host else host
        query = f"/?token={self.access.token}" if self.access.token else "/"
        return f"http://{shown}:{port}{query}"

    @functools.cached_property
    def optimizations(self) -> OptimizationViews:
        """The optimization pages, imported when first shown: Optuna's import (about 0.5 s)
        is not part of ``trainer ui``'s start."""
        from trainer_sdk.ui.optimization import OptimizationViews

        return OptimizationViews(self._optimizer)

    def info(self) -> dict[str, Any]:
        backend = self.client.backend
        return {
            "backend": backend.kind,
            "canStop": backend.can_stop and self.allow_delete,
            "canDelete": self.allow_delete,
        }

    def jobs(self, query: Mapping[str, str]) -> tuple[list[Mapping[str, Any]], int]:
        """A page of the job list (``q``, ``status``, ``sort``, ``order``, ``offset``,
        ``limit``; newest first by default) and how many rows match in all."""
        selection = (
            query.get("q", ""),
            query.get("status", ""),
            query.get("sort", "created"),
            query.get("order", "desc") != "asc",
        )
        limit = _count(query, "limit", 0) if "limit" in query else None
        return self.job_list.page(selection, _count(query, "offset", 0), limit, self.clock())

    def job(self, name: str) -> dict[str, Any]:
        backend = self.client.backend
        job = self.client.get_job(name)
        trainjob = backend.get_job_manifest(name)
        return views.job_detail(
            job,
            trainjob,
            backend.get_jobset_manifest(name),
            self.client.get_job_events(name),
            finished_at(trainjob),
            self.clock(),
            self._failure(job) if job.status == constants.TRAINJOB_FAILED else None,
        )

    def _failure(self, job: TrainJob) -> dict[str, Any]:
        """Why ``job`` failed, read once (its logs do not change any more) and kept."""
        key = (job.name, job.creation_timestamp)
        if key not in self._failures:
            if len(self._failures) >= _FAILURES_KEPT:
                self._failures.pop(next(iter(self._failures)))
            error = self.client.backend.failure(job)
            self._failures[key] = views.failure_view(error, self.client.get_job_metrics(job.name))
        return self._failures[key]

    def metrics(self, name: str) -> dict[str, Any]:
        points: list[MetricPoint] = self.client.get_job_metrics(name)
        if not self.client.backend.keeps_metric_history:
            created = self.client.get_job(name).creation_timestamp.isoformat()
            points = self.observed.observe(name, created, points)
        return views.metric_series(points)

    def _sample(self) -> None:
        """Until closed: where the backend samples them, every RESOURCE_SECONDS the running
        jobs' pods' CPU and memory; where it keeps no metric history (a cluster), every
        SAMPLE_SECONDS each running job's latest metrics into the history, and the points past
        the retention out of it."""
        backend = self.client.backend
        seconds = RESOURCE_SECONDS if backend.samples_resources else SAMPLE_SECONDS
        while not self._closed.wait(seconds):
            try:
                if backend.samples_resources:
                    self._sample_resources()
                if not backend.keeps_metric_history:
                    self._sample_metrics()
            except Exception as error:  # an API server away, a job deleted meanwhile: next time
                _logger.warning("sampling: %s", error)

    def _sample_metrics(self) -> None:
        for job in self.client.list_jobs():
            if job.status in _SAMPLED:
                created = job.creation_timestamp.isoformat()
                self.observed.observe(job.name, created, self._latest(job.name))
        self.observed.prune()

    def _sample_resources(self) -> None:
        indexed = self.job_list.refresh()
        self.resources.keep_only(item.job.name for item in indexed)
        running = [item.job.name for item in indexed if item.job.status in _SAMPLED]
        if not running:
            return
        now = time.time()
        for name, usage in self.client.backend.sample_resources(running).items():
            self.resources.record(name, usage, now)

    def _latest(self, name: str) -> list[MetricPoint]:
        """A cluster job's latest reported point (none when it was deleted meanwhile)."""
        try:
            return self.client.get_job_metrics(name)
        except JobNotFoundError:
            return []

    def runtimes(self) -> list[dict[str, Any]]:
        manifests = self.client.backend.runtime_manifests()
        return [views.runtime_view(manifests[name]) for name in sorted(manifests)]

    def stop(self, name: str) -> dict[str, str]:
        self._check_writable()
        backend = self.client.backend
        if not backend.can_stop:
            raise _ApiError(
                HTTPStatus.METHOD_NOT_ALLOWED,
                f"stop: a {backend.kind} job cannot be stopped and kept; delete it instead",
            )
        backend.stop_job(name)
        return {"stopped": name}

    def delete(self, name: str) -> dict[str, str]:
        self._check_writable()
        self.client.delete_job(name)
        return {"deleted": name}

    def _check_writable(self) -> None:
        if not self.allow_delete:
            raise _ApiError(HTTPStatus.FORBIDDEN, "this UI is read-only (started without delete)")

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        """Answer until ``shutdown()`` (``poll_interval``: socketserver's argument, unused here:
        ``shutdown()`` wakes the event loop at once)."""
        try:
            self._loop.run_until_complete(self._stopping.wait())
        finally:
            self._served.set()

    def shutdown(self) -> None:
        """From another thread: make ``serve_forever()`` return, and wait until it has."""
        if not self._served.is_set():
            self._loop.call_soon_threadsafe(self._stopping.set)
        self._served.wait()

    def server_close(self) -> None:
        """Stop listening and sampling; answers still running get _CLOSE_SECONDS, then end.
        Closing again does nothing."""
        if self._loop.is_closed():
            return
        self._closed.set()
        self._loop.run_until_complete(self._runner.cleanup())
        self._loop.close()
        self._pool.shutdown(wait=False, cancel_futures=True)
        self.observed.close()

    # -- the web application --------------------------------------------------------------------
    def _app(self) -> web.Application:
        app = web.Application(middlewares=[self._guard])
        app.on_response_prepare.append(_secure)
        answer, per_job = self._answer, self._per_job
        app.add_routes(
            [
                web.get("/", _file(STATIC_DIR / "index.html")),
                web.get("/favicon.ico", _file(STATIC_DIR / "favicon.svg")),
                web.static("/static", STATIC_DIR),
                web.get("/api/info", answer(lambda request: self.info())),
                web.get("/api/jobs", self._blocking(self._job_list)),
                web.get("/api/runtimes", answer(lambda request: self.runtimes())),
                web.get("/api/optimizations", self._blocking(self._optimizations)),
                web.get("/api/optimizations/{parts:.+}", self._blocking(self._optimizations)),
                web.get("/api/jobs/{name}", per_job(self.job)),
                web.get("/api/jobs/{name}/metrics", per_job(self.metrics)),
                web.get("/api/jobs/{name}/resources", per_job(self.resources.series)),
                web.get("/api/jobs/{name}/logs", self._log),
                web.get("/api/jobs/{name}/logs/search", answer(self._search)),
                web.get("/api/jobs/{name}/logs/stream", self._stream_log),
                web.post("/api/jobs/{name}/stop", per_job(self.stop)),
                web.post("/api/jobs/{name}/delete", per_job(self.delete)),
            ]
        )
        return app

    @web.middleware
    async def _guard(self, request: web.Request, handler: _Handler) -> web.StreamResponse:
        """The access rules before any answer; every refusal and error as JSON."""
        query = _query(request)
        refusal = self.access.refusal(request.method, request.headers, query.get("token"))
        if refusal is not None:
            return _json(HTTPStatus(refusal[0]), {"error": refusal[1]})
        if "token" in query and request.method == "GET":
            return self._remember_token(request.path)
        try:
            return await handler(request)
        except _ApiError as error:
            return _json(error.status, {"error": str(error)})
        except web.HTTPNotFound:
            return _json(HTTPStatus.NOT_FOUND, {"error": f"no file or page {request.path!r}"})
        except web.HTTPException as error:
            message = f"{request.method} {request.path}: {error.reason}"
            return _json(HTTPStatus(error.status), {"error": message})
        except JobNotFoundError as error:
            return _json(HTTPStatus.NOT_FOUND, {"error": str(error)})
        except (TrainerError, ValueError) as error:
            return _json(HTTPStatus.BAD_REQUEST, {"error": str(error)})

    def _remember_token(self, path: str) -> web.Response:
        """``?token=`` once: keep it in a cookie, and drop it from the address bar."""
        response = web.Response(status=HTTPStatus.SEE_OTHER, headers={"Location": path})
        assert self.access.token is not None  # refusal() let a token through: there is one
        response.set_cookie(
            COOKIE_NAME, self.access.token, httponly=True, samesite="Strict", path="/"
        )
        return response

    async def _call(self, function: Callable[..., _T], *args: Any) -> _T:
        """``function(*args)`` on an answering thread (the backend blocks)."""
        return await asyncio.get_running_loop().run_in_executor(self._pool, function, *args)

    def _blocking(self, handler: Callable[[web.Request], web.StreamResponse]) -> _Handler:
        """``handler`` run on an answering thread: the backend blocks, and JSON takes time."""

        async def handle(request: web.Request) -> web.StreamResponse:
            return await self._call(handler, request)

        return handle

    def _answer(self, view: Callable[[web.Request], Any]) -> _Handler:
        """A handler answering ``view(request)`` as JSON, on an answering thread."""
        return self._blocking(lambda request: _json(HTTPStatus.OK, view(request)))

    def _per_job(self, view: Callable[[str], Any]) -> _Handler:
        """A handler answering ``view(NAME)`` for a route's ``{name}``, as ``_answer`` does."""
        return self._answer(lambda request: view(_name(request)))

    def _job_list(self, request: web.Request) -> web.Response:
        """The rows with a weak ETag over all but the clock (age, a running job's duration): a
        page polling with If-None-Match gets 304 while nothing else changed."""
        rows, total = self.jobs(_query(request))
        steady = [{k: v for k, v in row.items() if k not in _CLOCK_FIELDS} for row in rows]
        digest = hashlib.sha256(json.dumps([steady, total]).encode()).hexdigest()[:32]
        headers = {"ETag": f'W/"{digest}"', "X-Total-Count": str(total)}
        if request.headers.get("If-None-Match") == headers["ETag"]:
            return web.Response(status=HTTPStatus.NOT_MODIFIED, headers=headers)
        return _json(HTTPStatus.OK, rows, headers)

    def _optimizations(self, request: web.Request) -> web.Response:
        parts = request.match_info.get("parts", "")
        return _json(*self.optimizations.answer(parts.split("/") if parts else [], self.clock()))

    def _search(self, request: web.Request) -> dict[str, Any]:
        query = _query(request)
        if not query.get("q"):
            raise _ApiError(HTTPStatus.BAD_REQUEST, "q: the query needs ?q=TEXT")
        lines = self.client.get_job_logs(_name(request), _step(query))
        return views.log_matches(lines, query["q"])

    async def _log(self, request: web.Request) -> web.StreamResponse:
        """A step's log as text, written as it is read (chunked), never whole in memory."""
        name, query = _name(request), _query(request)
        step = _step(query)
        lines: Iterable[str] = await self._call(self.client.get_job_logs, name, step)
        start = _count(query, "start", 0)  # a bad step or number is refused before the header
        count = _count(query, "count", 0) if "count" in query else None
        if start or count is not None:
            lines = islice(lines, start, None if count is None else start + count)
        response = web.StreamResponse(headers={"Content-Type": "text/plain; charset=utf-8"})
        if query.get("download") == "1":
            response.headers["Content-Disposition"] = f'attachment; filename="{name}-{step}.log"'
        await response.prepare(request)
        chunks = _batched(lines)
        while chunk := await self._call(next, chunks, b""):
            await self._write(response, chunk)
        await response.write_eof()
        return response

    async def _stream_log(self, request: web.Request) -> web.StreamResponse:
        """Server-sent events: each ``data`` is a JSON list of the lines that arrived since the
        last one (an empty list while the job is quiet), then ``end`` when the job has ended.
        With ``tail``, a first ``skipped`` event gives how many lines it leaves out (locally;
        elsewhere the whole log comes, and it says 0)."""
        name, query = _name(request), _query(request)
        step = _step(query)
        tail = _count(query, "tail", 0) if "tail" in query else None
        lines: Iterator[str] = await self._call(
            lambda: self.client.get_job_logs(name, step, follow=True)
        )
        skip = 0
        if tail is not None:
            length = await self._call(self.client.backend.log_length, name, step)
            skip = max(0, length - tail) if length is not None else 0
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream; charset=utf-8"})
        await response.prepare(request)
        if tail is not None:
            await self._write(response, f"event: skipped\ndata: {skip}\n\n".encode())
        async with contextlib.aclosing(logstream.batches(lines, skip=skip)) as batches:
            async for batch in batches:
                await self._write(response, f"data: {strict_json.dumps(batch)}\n\n".encode())
        await self._write(response, b"event: end\ndata: {}\n\n")
        await response.write_eof()
        return response

    async def _write(self, response: web.StreamResponse, data: bytes) -> None:
        """Send ``data``; a client that reads none of it for idle_seconds is dropped (aiohttp
        closes the connection of an answer that raised)."""
        await asyncio.wait_for(response.write(data), self.limits.idle_seconds)


async def _secure(request: web.Request, response: web.StreamResponse) -> None:
    """On every answer: no sniffing, only this origin's scripts; files are revalidated (their
    ETag), everything else is never stored."""
    response.headers.update(_SECURITY_HEADERS)
    stored = isinstance(response, web.FileResponse)
    response.headers.setdefault("Cache-Control", "no-cache" if stored else "no-store")


def _file(path: Path) -> _Handler:
    async def send(request: web.Request) -> web.FileResponse:
        return web.FileResponse(path)

    return send


def _json(
    status: HTTPStatus, document: Any, headers: Mapping[str, str] | None = None
) -> web.Response:
    body = strict_json.dumps(document).encode()
    return web.Response(status=status, body=body, content_type="application/json", headers=headers)


def _name(request: web.Request) -> str:
    return request.match_info["name"]


def _query(request: web.Request) -> dict[str, str]:
    """The query's non-empty fields (the last value of each)."""
    return {key: value for key, value in request.query.items() if value}


def _step(query: Mapping[str, str]) -> str:
    if not query.get("step"):
        raise _ApiError(HTTPStatus.BAD_REQUEST, "step: the query needs ?step=STEP")
    return query["step"]


def _count(query: Mapping[str, str], field: str, default: int) -> int:
    """A non-negative whole number from the query, or ``default``."""
    if field not in query:
        return default
    if not query[field].isdigit():
        raise _ApiError(
            HTTPStatus.BAD_REQUEST, f"{field}: expected a whole number, got {query[field]!r}"
        )
    return int(query[field])


def _batched(lines: Iterable[str]) -> Iterator[bytes]:
    """``lines`` as newline-ended UTF-8, in pieces of about _CHUNK_BYTES."""
    batch: list[bytes] = []
    size = 0
    for line in lines:
        encoded = f"{line}\n".encode()
        batch.append(encoded)
        size += len(encoded)
        if size >= _CHUNK_BYTES:
            yield b"".join(batch)
            batch, size = [], 0
    yield b"".join(batch)
