"""``trainer ui``'s HTTP server (standard library): the page, its assets, and a JSON API over
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

import contextlib
import hashlib
import json
import logging
import mimetypes
import socket
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime, timezone
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import islice
from pathlib import Path
from typing import Any, Final

from trainer_sdk import constants
from trainer_sdk.backends.local.backend import LocalBackend
from trainer_sdk.client import TrainerClient
from trainer_sdk.errors import JobNotFoundError, TrainerError
from trainer_sdk.training.metrics import MetricPoint
from trainer_sdk.types import TrainJob
from trainer_sdk.ui import logstream, manifests, resources, strict_json, views
from trainer_sdk.ui.access import Access
from trainer_sdk.ui.connections import DEFAULT_LIMITS, ConnectionLimits, Connections
from trainer_sdk.ui.joblist import JobList
from trainer_sdk.ui.observed import DEFAULT_RETENTION_DAYS, ObservedHistory
from trainer_sdk.ui.optimization import OptimizationViews

__all__ = ["STATIC_DIR", "UiServer"]

STATIC_DIR: Final = Path(__file__).parent / "static"
_CHUNK_BYTES: Final = 64 * 1024
_CLOCK_FIELDS: Final = frozenset({"age", "duration"})
_FAILURES_KEPT: Final = 256  # failed jobs whose cause the server keeps rather than re-reads
SAMPLE_SECONDS: Final = 5.0  # how often a cluster's running jobs are sampled into the history
RESOURCE_SECONDS: Final = 2.0  # how often the local running jobs' pods are sampled
_SAMPLED: Final = frozenset({constants.TRAINJOB_CREATED, constants.TRAINJOB_RUNNING})
_logger = logging.getLogger(__name__)
_BUSY: Final = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: 36\r\n"
    b"Connection: close\r\n\r\nthe UI is answering too many clients\n"
)


def _now() -> datetime:
    return datetime.now(timezone.utc)


class _ApiError(Exception):
    """An answer other than 200, with the reason shown to the user."""

    def __init__(self, status: HTTPStatus, message: str) -> None:
        super().__init__(message)
        self.status = status


class UiServer(ThreadingHTTPServer):
    """Serves the UI for ``client`` on ``access.host``:``port`` (0: any free port); a cluster's
    metric history is kept in ``history`` (SQLite; None: in memory) for ``retention_days``."""

    daemon_threads = True

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
    ) -> None:
        self.client, self.access, self.allow_delete, self.clock = (
            client,
            access,
            allow_delete,
            clock,
        )
        # locally the job's own metric files are the history: nothing is kept here
        self.observed = ObservedHistory(None if self.is_local else history, retention_days)
        self.resources = resources.ResourceHistory()
        self._closed = threading.Event()
        self._failures: dict[tuple[str, datetime], dict[str, Any]] = {}
        self.job_list = JobList(client)
        self.optimizations = OptimizationViews(client)
        self.log_streams: set[threading.Event] = set()
        self.connections = Connections(limits)
        try:
            super().__init__((access.host, port), _Handler)
        except OSError:
            self.connections.close()
            self.observed.close()
            raise
        threading.Thread(target=self._sample, name="ui-sampler", daemon=True).start()

    @property
    def url(self) -> str:
        host, port = str(self.access.host), self.server_address[1]
        shown = f"[{host}]" if ":" in host else host
        query = f"/?token={self.access.token}" if self.access.token else "/"
        return f"http://{shown}:{port}{query}"

    @property
    def is_local(self) -> bool:
        return isinstance(self.client.backend, LocalBackend)

    def info(self) -> dict[str, Any]:
        return {
            "backend": "local" if self.is_local else "kubernetes",
            "canStop": self.is_local and self.allow_delete,
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
        trainjob = manifests.trainjob_manifest(backend, name)
        return views.job_detail(
            job,
            trainjob,
            manifests.jobset_manifest(backend, name),
            self.client.get_job_events(name),
            manifests.finished_at(trainjob),
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
        if not self.is_local:
            created = self.client.get_job(name).creation_timestamp.isoformat()
            points = self.observed.observe(name, created, points)
        return views.metric_series(points)

    def _sample(self) -> None:
        """Until closed: locally every RESOURCE_SECONDS the running jobs' pods' CPU and memory;
        on a cluster every SAMPLE_SECONDS each running job's latest metrics into the history,
        and the points past the retention out of it."""
        local = self.is_local
        while not self._closed.wait(RESOURCE_SECONDS if local else SAMPLE_SECONDS):
            try:
                if local:
                    self._sample_resources()
                else:
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
        backend = self.client.backend
        assert isinstance(backend, LocalBackend)
        indexed = self.job_list.refresh()
        self.resources.keep_only(item.job.name for item in indexed)
        running = [item.job.name for item in indexed if item.job.status in _SAMPLED]
        if not running:
            return
        table = resources.ProcessTable()
        for name in running:
            try:
                pods, cgroup = manifests.local_pods(backend, name)
            except (JobNotFoundError, OSError, ValueError):
                continue  # deleted meanwhile
            usage = {pod: table.tree(pid) for pod, pid in pods.items()}
            if cgroup is not None and (total := resources.cgroup_usage(cgroup)) is not None:
                usage["job (cgroup)"] = total
            self.resources.record(name, usage, time.time())

    def _latest(self, name: str) -> list[MetricPoint]:
        """A cluster job's latest reported point (none when it was deleted meanwhile)."""
        try:
            return self.client.get_job_metrics(name)
        except JobNotFoundError:
            return []

    def runtimes(self) -> list[dict[str, Any]]:
        return [
            views.runtime_view(item) for item in manifests.runtime_manifests(self.client.backend)
        ]

    def stop(self, name: str) -> None:
        if not self.allow_delete:
            raise _ApiError(HTTPStatus.FORBIDDEN, "this UI is read-only (started without delete)")
        backend = self.client.backend
        if not isinstance(backend, LocalBackend):
            raise _ApiError(
                HTTPStatus.METHOD_NOT_ALLOWED,
                "stop: a cluster job cannot be stopped and kept; delete it instead",
            )
        backend.stop_job(name)

    def delete(self, name: str) -> None:
        if not self.allow_delete:
            raise _ApiError(HTTPStatus.FORBIDDEN, "this UI is read-only (started without delete)")
        self.client.delete_job(name)

    def process_request(self, request: Any, client_address: Any) -> None:
        """A thread for ``request`` when the cap allows, else a 503 without one."""
        if self.connections.admit(request):
            super().process_request(request, client_address)
            return
        with contextlib.suppress(OSError):  # the client is gone already; nothing to tell it
            request.sendall(_BUSY)
        self.shutdown_request(request)

    def shutdown_request(self, request: Any) -> None:
        self.connections.release(request)
        super().shutdown_request(request)

    def server_close(self) -> None:
        self._closed.set()
        for stream in list(self.log_streams):
            stream.set()
        self.connections.close()
        super().server_close()
        self.observed.close()


class _Handler(BaseHTTPRequestHandler):
    server: UiServer
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        """Every read and write on the socket is bounded too (a client that stops reading)."""
        super().setup()
        self.connection.settimeout(self.server.connections.limits.idle_seconds)
        # headers and body go out as two writes: without this, Nagle's algorithm holds the body
        # until the client's delayed ACK of the headers (40 ms a request on Linux)
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the terminal shows the URL, not every request."""

    def handle_one_request(self) -> None:
        try:
            super().handle_one_request()
        except (TimeoutError, ConnectionResetError, BrokenPipeError):
            self.close_connection = True  # too slow, or gone: drop it
        self.server.connections.waiting(self.connection)

    def parse_request(self) -> bool:
        """The request line and headers have arrived: no header deadline while answering."""
        parsed = super().parse_request()
        self.server.connections.busy(self.connection)
        return parsed

    # -- dispatch -------------------------------------------------------------------------------
    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def _dispatch(self, method: str) -> None:
        url = urllib.parse.urlsplit(self.path)
        query = {key: values[-1] for key, values in urllib.parse.parse_qs(url.query).items()}
        headers = {key.lower(): str(value) for key, value in self.headers.items()}
        refusal = self.server.access.refusal(method, headers, query.get("token"))
        if refusal is not None:
            self._send_json(HTTPStatus(refusal[0]), {"error": refusal[1]})
            return
        if "token" in query and method == "GET":
            self._remember_token(url.path)
            return
        parts = [urllib.parse.unquote(part) for part in url.path.strip("/").split("/")]
        try:
            if method == "GET" and url.path == "/":
                self._send_file(STATIC_DIR / "index.html")
            elif method == "GET" and url.path == "/favicon.ico":
                self._send_file(STATIC_DIR / "favicon.svg")
            elif method == "GET" and parts[0] == "static":
                self._send_static(parts[1:])
            elif parts[0] == "api":
                self._api(method, parts[1:], query)
            else:
                raise _ApiError(HTTPStatus.NOT_FOUND, f"no page {url.path!r}")
        except _ApiError as error:
            self._send_json(error.status, {"error": str(error)})
        except JobNotFoundError as error:
            self._send_json(HTTPStatus.NOT_FOUND, {"error": str(error)})
        except (TrainerError, ValueError) as error:
            self._send_json(HTTPStatus.BAD_REQUEST, {"error": str(error)})

    def _api(self, method: str, parts: list[str], query: dict[str, str]) -> None:
        server = self.server
        match (method, parts):
            case ("GET", ["info"]):
                self._send_json(HTTPStatus.OK, server.info())
            case ("GET", ["jobs"]):
                self._send_job_list(*server.jobs(query))
            case ("GET", ["runtimes"]):
                self._send_json(HTTPStatus.OK, server.runtimes())
            case ("GET", ["optimizations", *rest]):
                self._send_json(*server.optimizations.answer(rest, server.clock()))
            case ("GET", ["jobs", name]):
                self._send_json(HTTPStatus.OK, server.job(name))
            case ("GET", ["jobs", name, "metrics"]):
                self._send_json(HTTPStatus.OK, server.metrics(name))
            case ("GET", ["jobs", name, "resources"]):
                self._send_json(HTTPStatus.OK, server.resources.series(name))
            case ("GET", ["jobs", name, "logs"]):
                self._send_log(name, self._step(query), query)
            case ("GET", ["jobs", name, "logs", "search"]):
                if not query.get("q"):
                    raise _ApiError(HTTPStatus.BAD_REQUEST, "q: the query needs ?q=TEXT")
                lines = server.client.get_job_logs(name, self._step(query))
                self._send_json(HTTPStatus.OK, views.log_matches(lines, query["q"]))
            case ("GET", ["jobs", name, "logs", "stream"]):
                tail = _count(query, "tail", 0) if "tail" in query else None
                self._stream_log(name, self._step(query), tail)
            case ("POST", ["jobs", name, "stop"]):
                server.stop(name)
                self._send_json(HTTPStatus.OK, {"stopped": name})
            case ("POST", ["jobs", name, "delete"]):
                server.delete(name)
                self._send_json(HTTPStatus.OK, {"deleted": name})
            case _:
                raise _ApiError(HTTPStatus.NOT_FOUND, f"no API {method} /api/{'/'.join(parts)}")

    @staticmethod
    def _step(query: dict[str, str]) -> str:
        if not query.get("step"):
            raise _ApiError(HTTPStatus.BAD_REQUEST, "step: the query needs ?step=STEP")
        return query["step"]

    # -- answers --------------------------------------------------------------------------------
    def _send(self, status: HTTPStatus, body: bytes, content_type: str, **headers: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Content-Security-Policy", "default-src 'self'; img-src 'self' data:")
        for key, value in headers.items():
            self.send_header(key.replace("_", "-"), value)
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the page went away before the answer

    def _send_json(self, status: HTTPStatus, document: Any) -> None:
        self._send(status, strict_json.dumps(document).encode(), "application/json")

    def _send_job_list(self, rows: list[Mapping[str, Any]], total: int) -> None:
        """The rows with a weak ETag over all but the clock (age, a running job's duration): a
        page polling with If-None-Match gets 304 while nothing else changed."""
        steady = [{k: v for k, v in row.items() if k not in _CLOCK_FIELDS} for row in rows]
        digest = hashlib.sha256(json.dumps([steady, total]).encode()).hexdigest()[:32]
        tag = f'W/"{digest}"'
        if self.headers.get("If-None-Match") == tag:
            self.send_response(HTTPStatus.NOT_MODIFIED)
            self.send_header("ETag", tag)
            self.send_header("X-Total-Count", str(total))
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = strict_json.dumps(rows).encode()
        self._send(HTTPStatus.OK, body, "application/json", ETag=tag, X_Total_Count=str(total))

    def _send_file(self, path: Path) -> None:
        content_type = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        self._send(HTTPStatus.OK, path.read_bytes(), f"{content_type}; charset=utf-8")

    def _send_static(self, parts: list[str]) -> None:
        path = STATIC_DIR.joinpath(*parts).resolve()
        if STATIC_DIR.resolve() not in path.parents or not path.is_file():
            raise _ApiError(HTTPStatus.NOT_FOUND, f"no file static/{'/'.join(parts)}")
        self._send_file(path)

    def _remember_token(self, path: str) -> None:
        """``?token=`` once: keep it in a cookie, and drop it from the address bar."""
        self.send_response(HTTPStatus.SEE_OTHER)
        self.send_header("Set-Cookie", self.server.access.cookie_header())
        self.send_header("Location", path or "/")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _send_chunked(
        self, status: HTTPStatus, chunks: Iterable[bytes], content_type: str, **headers: str
    ) -> None:
        """An answer of unknown length, written as it is read (chunked transfer encoding)."""
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        for key, value in headers.items():
            self.send_header(key.replace("_", "-"), value)
        self.end_headers()
        try:
            for chunk in chunks:
                if chunk:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError, TimeoutError):
            self.close_connection = True  # the page went away before the end

    def _send_log(self, name: str, step: str, query: dict[str, str]) -> None:
        lines = self.server.client.get_job_logs(name, step)  # a bad step raises before the header
        start = _count(query, "start", 0)
        count = _count(query, "count", 0) if "count" in query else None
        if start or count is not None:
            lines = islice(lines, start, None if count is None else start + count)
        headers = {"Content_Disposition": f'attachment; filename="{name}-{step}.log"'}
        self._send_chunked(
            HTTPStatus.OK,
            _batched(lines),
            "text/plain; charset=utf-8",
            **(headers if query.get("download") == "1" else {}),
        )

    def _stream_log(self, name: str, step: str, tail: int | None) -> None:
        """Server-sent events: each ``data`` is a JSON list of the lines that arrived since the
        last one (an empty list while the job is quiet), then ``end`` when the job has ended.
        With ``tail``, a first ``skipped`` event gives how many lines it leaves out (locally;
        elsewhere the whole log comes, and it says 0)."""
        lines: Iterator[str] = self.server.client.get_job_logs(name, step, follow=True)
        path = manifests.local_log(self.server.client.backend, name, step)
        skip = 0
        if tail is not None and path is not None and path.is_file():
            skip = max(0, logstream.line_count(path) - tail)
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-store")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        closed = threading.Event()
        self.server.log_streams.add(closed)
        try:
            if tail is not None:
                self.wfile.write(f"event: skipped\ndata: {skip}\n\n".encode())
            for batch in logstream.batches(lines, closed, skip=skip):
                self.wfile.write(f"data: {strict_json.dumps(batch)}\n\n".encode())
                self.wfile.flush()
            if not closed.is_set():
                self.wfile.write(b"event: end\ndata: {}\n\n")
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, TimeoutError):
            return  # the page went away, or stopped reading
        finally:
            closed.set()  # the reader thread stops too
            self.server.log_streams.discard(closed)


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
