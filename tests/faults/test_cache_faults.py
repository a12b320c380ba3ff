"""Fault injection against the data cache as a stranger and a careless client would meet it.

Each case starts the real ``data-cache serve`` in a child process on a loopback port and talks
to it with plain ``pyarrow.flight`` (no help from ``trainer_data_cache``'s client): anonymous
admin calls, loads outside the load roots, huge shard counts, and malformed calls whose errors
must say what was wrong without the server's traceback. Every call has a deadline
(``CALL_TIMEOUT``), and every child is stopped (then killed) after its test.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.flight as flight
import pyarrow.parquet as pq
import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

ROWS = 1000
START_TIMEOUT = 120.0
"""Seconds a cache may take to print its endpoint (it imports pyarrow and torch)."""
CALL_TIMEOUT = 20.0
"""Seconds any one call may take; a call that hangs fails the test instead."""
ADMIN_TOKEN = "fault-admin-token"
READ_TOKEN = "fault-read-token"
TRACEBACK_MARKS = ("Traceback", 'File "', '.py", line', "site-packages")


class Cache:
    """``python -m trainer_data_cache serve ARGS`` with ``env``; its endpoint and pid."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        clean = {k: v for k, v in os.environ.items() if not k.startswith("DATA_CACHE_")}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "trainer_data_cache", "serve", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env={**clean, **env},
        )
        lines: queue.Queue[str] = queue.Queue()
        assert self.process.stdout is not None
        stdout = self.process.stdout
        threading.Thread(target=lambda: lines.put(stdout.readline()), daemon=True).start()
        try:
            self.endpoint = lines.get(timeout=START_TIMEOUT).strip()
        except queue.Empty:
            self.stop()
            raise AssertionError(f"serve {args}: no endpoint within {START_TIMEOUT:g} s") from None
        if not self.endpoint.startswith("grpc://"):
            self.stop()
            raise AssertionError(f"serve {args}: exited with {self.process.returncode}")

    def peak_rss(self) -> int:
        """The process's peak resident memory in bytes (VmHWM)."""
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
        raise AssertionError("no VmHWM in /proc status")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)
        if self.process.stdout is not None:
            self.process.stdout.close()


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "served" / "train.parquet"
    path.parent.mkdir()
    pq.write_table(pa.table({"id": pa.array(range(ROWS), pa.int64())}), path)
    return path


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    """A file the server can read but nobody gave it to serve."""
    path = tmp_path / "private" / "secret.csv"
    path.parent.mkdir()
    pacsv.write_csv(pa.table({"password": ["hunter2"]}), path)
    return path


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Callable[..., Cache]]:
    caches: list[Cache] = []

    def run(args: list[str], **env: str) -> Cache:
        caches.append(Cache(args, env))
        return caches[-1]

    yield run
    for cache in caches:
        cache.stop()


def options(token: str | None = None) -> flight.FlightCallOptions:
    headers = [(b"authorization", f"Bearer {token}".encode())] if token else None
    return flight.FlightCallOptions(timeout=CALL_TIMEOUT, headers=headers)


def act(endpoint: str, kind: str, body: object, token: str | None = None) -> object:
    client = flight.FlightClient(endpoint)
    try:
        results = client.do_action(flight.Action(kind, json.dumps(body).encode()), options(token))
        return json.loads(next(iter(results)).body.to_pybytes())
    finally:
        client.close()


def put(endpoint: str, descriptor: flight.FlightDescriptor, token: str | None = None) -> None:
    client = flight.FlightClient(endpoint)
    try:
        table = pa.table({"id": pa.array([1], pa.int64())})
        writer, _ = client.do_put(descriptor, table.schema, options(token))
        with writer:
            writer.write_table(table)
    finally:
        client.close()


def rows(endpoint: str, dataset: str = "train", token: str | None = None) -> int:
    command = json.dumps({"v": 1, "dataset": dataset}).encode()
    client = flight.FlightClient(endpoint)
    try:
        info = client.get_flight_info(flight.FlightDescriptor.for_command(command), options(token))
        return sum(
            flight.FlightClient(endpoint.locations[0])
            .do_get(endpoint.ticket, options(token))
            .read_all()
            .num_rows
            for endpoint in info.endpoints
        )
    finally:
        client.close()


def node_locations(endpoint: str, token: str | None = None) -> list[str]:
    status = act(endpoint, "status", {}, token)
    assert isinstance(status, dict)
    return [node["location"] for node in status["nodes"]]


def assert_clean(error: BaseException) -> None:
    """The error names what was wrong, and nothing of the server's code."""
    message = str(error)
    assert not any(mark in message for mark in TRACEBACK_MARKS), message


# Anonymous cache actions ---------------------------------------------------------------------


def test_a_default_cache_refuses_every_admin_call_from_a_stranger(
    start: Callable[..., Cache], data: Path, secret: Path
) -> None:
    cache = start([str(data), "--nodes", "2"])
    node = node_locations(cache.endpoint)[0]
    stranger_calls: list[tuple[str, Callable[[], object]]] = [
        ("load", lambda: act(cache.endpoint, "load", {"dataset": "s", "paths": [str(secret)]})),
        ("drop", lambda: act(cache.endpoint, "drop", {"dataset": "train"})),
        ("head do_put", lambda: put(cache.endpoint, flight.FlightDescriptor.for_path("train"))),
        ("node drop", lambda: act(node, "drop", {"dataset": "train"})),
        (
            "node do_put",
            lambda: put(
                node,
                flight.FlightDescriptor.for_command(
                    json.dumps(
                        {"v": 1, "dataset": "train", "generation": 99, "partition": 0, "nbytes": 8}
                    ).encode()
                ),
            ),
        ),
    ]
    for what, call in stranger_calls:
        refused = "admin calls are off|present the cache's admin token"
        with pytest.raises(flight.FlightUnauthorizedError, match=refused) as caught:
            call()
        assert_clean(caught.value)
        assert rows(cache.endpoint) == ROWS, f"{what} changed the trainers' dataset"
    status = act(cache.endpoint, "status", {})
    assert isinstance(status, dict)
    assert [dataset["name"] for dataset in status["datasets"]] == ["train"]


def test_a_cache_with_tokens_refuses_strangers_and_readers_cannot_drop(
    start: Callable[..., Cache], data: Path
) -> None:
    cache = start(
        [str(data), "--nodes", "2"], DATA_CACHE_TOKEN=READ_TOKEN, DATA_CACHE_ADMIN_TOKEN=ADMIN_TOKEN
    )
    node = node_locations(cache.endpoint, READ_TOKEN)[0]
    for endpoint in (cache.endpoint, node):
        for token in (None, "guessed"):
            with pytest.raises(flight.FlightUnauthenticatedError):
                act(endpoint, "status", {}, token)
    with pytest.raises(flight.FlightUnauthenticatedError):
        rows(cache.endpoint)
    assert rows(cache.endpoint, token=READ_TOKEN) == ROWS
    with pytest.raises(flight.FlightUnauthorizedError, match="admin token"):
        act(cache.endpoint, "drop", {"dataset": "train"}, READ_TOKEN)
    assert act(cache.endpoint, "drop", {"dataset": "train"}, ADMIN_TOKEN) == {"dropped": True}


# Loads outside the roots ---------------------------------------------------------------------


def test_admin_loads_stay_within_the_load_roots(
    start: Callable[..., Cache], data: Path, secret: Path
) -> None:
    root = data.parent
    (root / "escape").symlink_to(secret.parent)
    cache = start([str(data), "--load-root", str(root)], DATA_CACHE_ADMIN_TOKEN=ADMIN_TOKEN)
    outside = [
        str(secret),
        f"{root}/../private/secret.csv",
        f"{root}/escape/secret.csv",
        str(root / "escape"),
        f"file://{secret}",
        "/etc/hostname",
    ]
    for path in outside:
        body = {"dataset": "stolen", "paths": [path], "format": "csv"}
        with pytest.raises(flight.FlightUnauthorizedError, match="outside the head's load roots"):
            act(cache.endpoint, "load", body, ADMIN_TOKEN)
    with pytest.raises(flight.FlightServerError, match="is not loaded"):
        rows(cache.endpoint, "stolen")
    loaded = act(cache.endpoint, "load", {"dataset": "again", "paths": [str(data)]}, ADMIN_TOKEN)
    assert isinstance(loaded, dict) and loaded["rows"] == ROWS


# Huge shard counts ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shard", "num_shards", "expected"),
    [
        pytest.param(7, 10**7, 1, id="10**7-shards"),
        pytest.param(10**12 - 1, 10**12, 0, id="10**12-shards"),
        pytest.param(ROWS - 1, 2**63 - 1, 1, id="int64-max-shards"),
    ],
)
def test_one_shard_of_a_huge_shard_count_costs_the_head_what_one_shard_does(
    start: Callable[..., Cache], data: Path, shard: int, num_shards: int, expected: int
) -> None:
    cache = start([str(data)])
    before = cache.peak_rss()
    command = json.dumps({"v": 1, "dataset": "train", "shard": shard, "num_shards": num_shards})
    began = time.monotonic()
    info = flight.FlightClient(cache.endpoint).get_flight_info(
        flight.FlightDescriptor.for_command(command.encode()), options()
    )
    took = time.monotonic() - began
    assert info.total_records == expected
    grown = cache.peak_rss() - before
    assert grown < 50 << 20, f"the head grew by {grown} bytes for one of {num_shards} shards"
    assert took < CALL_TIMEOUT


def test_a_shard_count_beyond_int64_is_refused_by_name(
    start: Callable[..., Cache], data: Path
) -> None:
    cache = start([str(data)])
    for num_shards in (2**63, 10**4000):
        command = f'{{"v": 1, "dataset": "train", "num_shards": {num_shards}}}'.encode()
        with pytest.raises(flight.FlightServerError) as caught:
            flight.FlightClient(cache.endpoint).get_flight_info(
                flight.FlightDescriptor.for_command(command), options()
            )
        assert "num_shards" in str(caught.value) or "not a JSON document" in str(caught.value)
        assert_clean(caught.value)


# No traceback leak ---------------------------------------------------------------------------


def raw_action(endpoint: str, kind: str, body: bytes) -> object:
    return list(flight.FlightClient(endpoint).do_action(flight.Action(kind, body), options()))


def get(endpoint: str, ticket: bytes) -> object:
    return flight.FlightClient(endpoint).do_get(flight.Ticket(ticket), options()).read_all()


def describe(endpoint: str, descriptor: flight.FlightDescriptor) -> object:
    return flight.FlightClient(endpoint).get_flight_info(descriptor, options())


def exchange(endpoint: str) -> object:
    _, reader = flight.FlightClient(endpoint).do_exchange(
        flight.FlightDescriptor.for_path("x"), options()
    )
    return reader.read_all()


HUGE_TICKET = {
    "v": 1, "dataset": "train", "generation": 1, "partition": 0, "base": 0, "start": 0,
    "stop": 2**64, "phase": 0, "batch_rows": 1,
}  # fmt: skip
MALFORMED: list[tuple[str, Callable[[str, str], object]]] = [
    ("load with paths 5", lambda head, node: act(head, "load", {"dataset": "x", "paths": 5})),
    ("drop of a list", lambda head, node: act(head, "drop", {"dataset": ["x"]})),
    ("action body not JSON", lambda head, node: raw_action(head, "load", b"{")),
    ("action body a list", lambda head, node: raw_action(head, "drop", b"[1]")),
    ("unknown action", lambda head, node: act(head, "explode", {})),
    ("do_get on the head", lambda head, node: get(head, b"{}")),
    ("do_exchange", lambda head, node: exchange(head)),
    ("garbage ticket", lambda head, node: get(node, b"\xff\x00")),
    ("ticket past int64", lambda head, node: get(node, json.dumps(HUGE_TICKET).encode())),
    (
        "node count of a list",
        lambda head, node: act(node, "count", {"dataset": [1], "partition": 0, "generation": 1}),
    ),
    (
        "node drop below a string",
        lambda head, node: act(node, "drop", {"dataset": "train", "below": "x"}, ADMIN_TOKEN),
    ),
    (
        "garbage descriptor",
        lambda head, node: describe(head, flight.FlightDescriptor.for_command(b"\x00garbage")),
    ),
    (
        "get_flight_info on a node",
        lambda head, node: describe(node, flight.FlightDescriptor.for_path("train")),
    ),
]


def test_malformed_calls_say_what_was_wrong_without_the_servers_traceback(
    start: Callable[..., Cache], data: Path
) -> None:
    cache = start([str(data)], DATA_CACHE_ADMIN_TOKEN=ADMIN_TOKEN)
    node = node_locations(cache.endpoint)[0]
    for what, call in MALFORMED:
        with pytest.raises(pa.ArrowException) as caught:
            call(cache.endpoint, node)
        assert_clean(caught.value)
        assert "internal error" not in str(caught.value), f"{what}: {caught.value}"
    assert rows(cache.endpoint) == ROWS
