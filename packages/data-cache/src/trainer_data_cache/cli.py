"""``data-cache``: run a cache (head and nodes together, or apart) and probe it."""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar

import click
import pyarrow.flight as flight
from data_cache_manifests import ADMIN_TOKEN_ENV, TOKEN_ENV

from trainer_data_cache.connection import ConnectOptions
from trainer_data_cache.errors import CacheError
from trainer_data_cache.filters import Filter
from trainer_data_cache.query import DEFAULT_QUERY_MEMORY
from trainer_data_cache.server.base import ServerSecurity
from trainer_data_cache.server.grace import DEFAULT_GRACE_PERIOD, close_within
from trainer_data_cache.server.head import DEFAULT_REPAIR_INTERVAL, HeadServer
from trainer_data_cache.server.local import LocalCache
from trainer_data_cache.server.node import DEFAULT_MEMORY_LIMIT, NodeServer

__all__ = ["ADMIN_TOKEN_ENV", "TOKEN_ENV", "main"]

_PROBE_INTERVAL = 1.0
"""Seconds between attempts of ``probe --wait``."""

_Command = TypeVar("_Command", bound=Callable[..., Any])
_host = click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
_port = click.option("--port", type=int, default=0, show_default=True, help="0 picks a free port.")
_advertise = click.option("--advertise-host", default=None, help="Host name given to clients.")
_tls_cert = click.option("--tls-cert", type=click.Path(exists=True, dir_okay=False), default=None)
_tls_key = click.option("--tls-key", type=click.Path(exists=True, dir_okay=False), default=None)
_memory = click.option(
    "--memory-limit",
    type=int,
    default=DEFAULT_MEMORY_LIMIT,
    show_default=True,
    help="Bytes of data each node may hold.",
)
_streams = click.option("--max-streams", type=int, default=64, show_default=True)
_query_memory = click.option(
    "--query-memory",
    type=click.IntRange(min=0),
    default=DEFAULT_QUERY_MEMORY,
    show_default=True,
    help="Bytes of a node's --memory-limit one query (a stream or a count) may use.",
)
_repair = click.option(
    "--repair-interval",
    type=click.FloatRange(min=0),
    default=DEFAULT_REPAIR_INTERVAL,
    show_default=True,
    help="Seconds between checks that every node holds its partitions (0: never repair).",
)
_load_roots = click.option(
    "--load-root",
    "load_roots",
    multiple=True,
    help="Let admin clients load sources under this path or URI prefix (repeat; none: remote "
    "loads are off).",
)
_grace = click.option(
    "--grace-period",
    type=click.FloatRange(min=0),
    default=DEFAULT_GRACE_PERIOD,
    show_default=True,
    help="Seconds to let streams end after SIGTERM or SIGINT before exiting regardless.",
)
_anonymous = click.option(
    "--allow-anonymous-reads",
    is_flag=True,
    help=f"Serve a non-loopback --host without {TOKEN_ENV}, so anyone who reaches it reads.",
)
_source = [
    click.argument("paths", nargs=-1, required=True),
    click.option("--name", default=None, help="Dataset name (default: the first path's stem)."),
    click.option("--columns", default=None, help="Comma-separated columns to keep at load."),
    click.option("--filter", "row_filter", default=None, help="Filter: expression text or JSON."),
    click.option("--format", "source_format", default=None, help="parquet, ipc, csv or iceberg."),
]


def _with_source(command: _Command) -> _Command:
    """``command`` with every source option."""
    for option in reversed(_source):
        command = option(command)
    return command


@click.group()
@click.version_option(
    package_name="trainer-data-cache", prog_name="data-cache", message="%(prog)s %(version)s"
)
def main() -> None:
    """An Arrow Flight cache that streams exact shards of a dataset to training ranks."""


@main.command()
@_with_source
@_host
@_port
@click.option("--nodes", "num_nodes", type=int, default=1, show_default=True)
@click.option("--replicas", type=int, default=1, show_default=True)
@_memory
@_streams
@_query_memory
@_repair
@_advertise
@_tls_cert
@_tls_key
@_load_roots
@_anonymous
@_grace
def serve(
    paths: tuple[str, ...],
    name: str | None,
    columns: str | None,
    row_filter: str | None,
    source_format: str | None,
    host: str,
    port: int,
    num_nodes: int,
    replicas: int,
    memory_limit: int,
    max_streams: int,
    query_memory: int,
    repair_interval: float,
    advertise_host: str | None,
    tls_cert: str | None,
    tls_key: str | None,
    load_roots: tuple[str, ...],
    allow_anonymous_reads: bool,
    grace_period: float,
) -> None:
    """Serve PATHS as one dataset from a head and --nodes nodes in this process.

    Prints the endpoint (grpc://HOST:PORT) as the first line, then serves until interrupted.
    Without a token, only this process loads and drops (admin calls are off over Flight).
    """
    security = _security(tls_cert, tls_key, host, allow_anonymous_reads)
    with _failing_cleanly():
        cache = LocalCache(
            num_nodes,
            host,
            port,
            replicas=replicas,
            memory_limit=memory_limit,
            max_streams=max_streams,
            query_memory=query_memory,
            security=security,
            advertise_host=advertise_host,
            tls_root_certs=security.certificate,
            repair_interval=repair_interval or None,
            load_roots=load_roots,
        )
        with _closing_within(cache.close, grace_period):
            _load(cache.head, paths, name, columns, row_filter, source_format)
            _announce_and_wait(cache.endpoint)


@main.command()
@_with_source
@click.option("--node", "nodes", multiple=True, required=True, help="A node's location; repeat.")
@_host
@_port
@click.option("--replicas", type=int, default=1, show_default=True)
@click.option("--wait-for-nodes", type=float, default=120.0, show_default=True, help="Seconds.")
@_repair
@_advertise
@_tls_cert
@_tls_key
@_load_roots
@_anonymous
@_grace
def head(
    paths: tuple[str, ...],
    name: str | None,
    columns: str | None,
    row_filter: str | None,
    source_format: str | None,
    nodes: tuple[str, ...],
    host: str,
    port: int,
    replicas: int,
    wait_for_nodes: float,
    repair_interval: float,
    advertise_host: str | None,
    tls_cert: str | None,
    tls_key: str | None,
    load_roots: tuple[str, ...],
    allow_anonymous_reads: bool,
    grace_period: float,
) -> None:
    """Run a head that loads PATHS onto the --node servers; prints its endpoint first.

    Needs the nodes' admin token (DATA_CACHE_ADMIN_TOKEN, or DATA_CACHE_TOKEN) to push to them.
    """
    security = _security(tls_cert, tls_key, host, allow_anonymous_reads, needs_admin=True)
    connect = ConnectOptions(token=security.admin, tls_root_certs=security.certificate)
    with _failing_cleanly():
        server = HeadServer(
            list(nodes),
            host,
            port,
            replicas=replicas,
            security=security,
            connect=connect,
            advertise_host=advertise_host,
            expect=[name or _stem(paths[0])],
            repair_interval=repair_interval or None,
            load_roots=load_roots,
        )
        with _closing_within(server.shutdown, grace_period):
            server.wait_for_nodes(wait_for_nodes)
            _load(server, paths, name, columns, row_filter, source_format)
            _announce_and_wait(server.location)


@main.command()
@_host
@_port
@_memory
@_streams
@_query_memory
@_advertise
@_tls_cert
@_tls_key
@_anonymous
@_grace
def node(
    host: str,
    port: int,
    memory_limit: int,
    max_streams: int,
    query_memory: int,
    advertise_host: str | None,
    tls_cert: str | None,
    tls_key: str | None,
    allow_anonymous_reads: bool,
    grace_period: float,
) -> None:
    """Run a data node; prints its location first, then serves until interrupted.

    Needs an admin token (DATA_CACHE_ADMIN_TOKEN, or DATA_CACHE_TOKEN): the head pushes
    partitions with it, and no one else can.
    """
    security = _security(tls_cert, tls_key, host, allow_anonymous_reads, needs_admin=True)
    with _failing_cleanly():
        server = NodeServer(
            host,
            port,
            memory_limit=memory_limit,
            max_streams=max_streams,
            query_memory=query_memory,
            security=security,
            advertise_host=advertise_host,
        )
        with _closing_within(server.shutdown, grace_period):
            _announce_and_wait(server.location)


@main.command()
@click.argument("endpoint")
@click.option("--timeout", type=float, default=5.0, show_default=True, help="Per attempt.")
@click.option(
    "--wait",
    type=click.FloatRange(min=0),
    default=0.0,
    show_default=True,
    help="Keep probing, once a second, for up to this many seconds (0: probe once).",
)
def probe(endpoint: str, timeout: float, wait: float) -> None:
    """Exit 0 if the head at ENDPOINT is ready (every partition loaded), else 1."""
    connect = ConnectOptions(token=os.environ.get(TOKEN_ENV) or os.environ.get(ADMIN_TOKEN_ENV))
    deadline = time.monotonic() + wait
    while True:
        try:
            results = list(
                connect.client(endpoint).do_action(
                    flight.Action("status", b""), connect.call_options(timeout)
                )
            )
            status = json.loads(results[0].body.to_pybytes())
            problem = ""
        except flight.FlightError as error:
            status, problem = None, f"{endpoint}: not reachable: {error}"
        ready = bool(status and status.get("ready"))
        if ready or time.monotonic() >= deadline:
            break
        time.sleep(max(min(_PROBE_INTERVAL, deadline - time.monotonic()), 0.0))
    if status is None:
        click.echo(problem + (f" (waited {wait:g} s)" if wait else ""), err=True)
        sys.exit(1)
    click.echo(json.dumps({"ready": ready, "datasets": [d["name"] for d in status["datasets"]]}))
    sys.exit(0 if ready else 1)


def _load(
    server: HeadServer,
    paths: tuple[str, ...],
    name: str | None,
    columns: str | None,
    row_filter: str | None,
    source_format: str | None,
) -> None:
    server.load(
        name or _stem(paths[0]),
        list(paths),
        columns=[column.strip() for column in columns.split(",")] if columns else None,
        filter=_filter(row_filter),
        format=source_format,
    )


def _announce_and_wait(endpoint: str) -> None:
    click.echo(endpoint)
    sys.stdout.flush()
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    stop.wait()


@contextlib.contextmanager
def _closing_within(close: Callable[[], None], grace: float) -> Iterator[None]:
    """Run the body, then ``close`` within ``grace`` seconds (``server.grace``)."""
    try:
        yield
    finally:
        close_within(close, grace, lambda message: click.echo(f"data-cache: {message}", err=True))


class _failing_cleanly:
    """Turn a CacheError into a message on stderr and exit status 2."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, error: object, traceback: object) -> None:
        if isinstance(error, CacheError):
            click.echo(f"data-cache: {error}", err=True)
            sys.exit(2)


def _security(
    tls_cert: str | None,
    tls_key: str | None,
    host: str,
    allow_anonymous_reads: bool,
    *,
    needs_admin: bool = False,
) -> ServerSecurity:
    """TLS from the options, tokens from the environment (never the command line)."""
    if (tls_cert is None) != (tls_key is None):
        raise click.UsageError("--tls-cert and --tls-key go together")
    security = ServerSecurity(
        certificate=Path(tls_cert).read_bytes() if tls_cert else None,
        private_key=Path(tls_key).read_bytes() if tls_key else None,
        token=os.environ.get(TOKEN_ENV) or None,
        admin_token=os.environ.get(ADMIN_TOKEN_ENV) or None,
    )
    if needs_admin and security.admin is None:
        raise click.UsageError(
            f"set {ADMIN_TOKEN_ENV} (or {TOKEN_ENV}): the head pushes partitions into the "
            "nodes with it, and the nodes take them from no one else"
        )
    if security.token is None and not allow_anonymous_reads and not _is_loopback(host):
        raise click.UsageError(
            f"--host {host}: without {TOKEN_ENV}, anyone who reaches this address reads the "
            "data; set it, or pass --allow-anonymous-reads"
        )
    return security


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _stem(path: str) -> str:
    name = PurePosixPath(path.rstrip("/")).name
    for suffix in (".metadata.json", ".parquet", ".arrow", ".feather", ".ipc", ".csv", ".pq"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _filter(text: str | None) -> Filter:
    if text is None or not text.lstrip().startswith("{"):
        return text
    try:
        parsed: Mapping[str, Any] = json.loads(text)
        return parsed
    except ValueError as error:
        raise click.BadParameter(f"not valid JSON: {error}", param_hint="--filter") from None
