"""The head over loopback: layout, schema, loading, actions, readiness, auth and TLS."""

from __future__ import annotations

import datetime
import json
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.flight as flight
import pyarrow.parquet as pq
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from data_cache_testing import ADMIN, ADMIN_TOKEN, AS_ADMIN
from trainer_data_cache import (
    AccessDeniedError,
    CacheDataset,
    CacheError,
    ConnectOptions,
    HeadServer,
    LocalCache,
    MemoryBudgetExceededError,
    ServerSecurity,
    UnsupportedCallError,
)
from trainer_data_cache.errors import from_flight_error, retry_after
from trainer_data_cache.server.head import plan_endpoints
from trainer_data_cache.tickets import ReadRequest, Ticket


def info(endpoint: str, **request: object) -> flight.FlightInfo:
    command = ReadRequest(**{"dataset": "d", **request}).to_bytes()  # type: ignore[arg-type]
    return flight.FlightClient(endpoint).get_flight_info(
        flight.FlightDescriptor.for_command(command)
    )


def action(
    endpoint: str,
    kind: str,
    body: dict[str, object] | None = None,
    connect: ConnectOptions = AS_ADMIN,
) -> dict[str, object]:
    results = flight.FlightClient(endpoint).do_action(
        flight.Action(kind, json.dumps(body or {}).encode()), connect.call_options()
    )
    return json.loads(next(iter(results)).body.to_pybytes())


@pytest.fixture
def replicated(tmp_path: Path) -> LocalCache:
    """Three nodes, two replicas, dataset ``d``; admin calls with ``ADMIN_TOKEN``, remote
    loads within ``tmp_path``."""
    with LocalCache(3, replicas=2, security=ADMIN, load_roots=[str(tmp_path)]) as cache:
        cache.head.load_table("d", pa.table({"x": np.arange(100), "y": np.arange(100) % 3}))
        yield cache


@pytest.mark.parametrize(
    ("counts", "shard", "num_shards", "expected"),
    [
        pytest.param([5, 5], 0, 1, [(0, 0, 5), (1, 5, 10)], id="whole"),
        pytest.param([5, 5], 1, 3, [(0, 4, 5), (1, 5, 7)], id="shard-spans-two-partitions"),
        pytest.param([0, 3], 0, 2, [(1, 0, 2)], id="empty-partition"),
        pytest.param([1, 1], 1, 3, [(1, 1, 2)], id="more-shards-than-rows"),
    ],
)
def test_plan_endpoints_cover_the_shard_with_partition_tickets(
    counts: list[int], shard: int, num_shards: int, expected: list[tuple[int, int, int]]
) -> None:
    request = ReadRequest("d", shard, num_shards, batch_rows=2)
    total, tickets = plan_endpoints("d", 7, counts, request)
    assert [(index, ticket.start, ticket.stop) for index, ticket in tickets] == expected
    assert total == sum(stop - start for _, start, stop in expected)
    assert all(ticket.phase == (expected[0][1] if expected else 0) for _, ticket in tickets)


@pytest.mark.parametrize(
    ("shard", "num_shards", "rows"),
    [
        pytest.param(42, 10**6, [42], id="one-row-of-10**6-shards"),
        pytest.param(10**12 - 1, 10**12, [], id="empty-last-of-10**12"),
        pytest.param(99, 2**63 - 1, [99], id="int64-many-shards"),
    ],
)
def test_a_shard_of_a_huge_shard_count_costs_the_head_what_one_shard_does(
    replicated: LocalCache, shard: int, num_shards: int, rows: list[int]
) -> None:
    tracemalloc.start()
    try:
        answer = info(replicated.endpoint, shard=shard, num_shards=num_shards)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2_000_000, f"planning one shard of {num_shards} took {peak} bytes"
    assert answer.total_records == len(rows)
    tickets = [Ticket.from_bytes(endpoint.ticket.ticket) for endpoint in answer.endpoints]
    assert [row for ticket in tickets for row in range(ticket.start, ticket.stop)] == rows


def test_flight_info_gives_exact_totals_and_replica_locations(replicated: LocalCache) -> None:
    shards = [info(replicated.endpoint, shard=s, num_shards=3) for s in range(3)]
    assert [shard.total_records for shard in shards] == [34, 33, 33]
    nodes = [node.location for node in replicated.nodes]
    first = shards[0].endpoints[0]
    assert [location.uri.decode() for location in first.locations] == nodes[:2]
    filtered = info(
        replicated.endpoint, filter={"column": "y", "op": "==", "value": 0}, columns=["x"]
    )
    assert filtered.total_records == 34
    assert filtered.schema.names == ["x"]
    rows = [
        flight.FlightClient(endpoint.locations[0]).do_get(endpoint.ticket).read_all()
        for endpoint in filtered.endpoints
    ]
    assert pa.concat_tables(rows).column("x").to_pylist() == list(range(0, 100, 3))


def test_get_schema_and_list_flights_describe_the_datasets(replicated: LocalCache) -> None:
    client = flight.FlightClient(replicated.endpoint)
    command = ReadRequest("d", columns=["y"]).to_bytes()
    assert client.get_schema(flight.FlightDescriptor.for_command(command)).schema.names == ["y"]
    (listed,) = list(client.list_flights())
    assert listed.total_records == 100 and listed.schema.names == ["x", "y"]
    assert (
        sum(
            Ticket.from_bytes(e.ticket.ticket).stop - Ticket.from_bytes(e.ticket.ticket).start
            for e in listed.endpoints
        )
        == 100
    )


def test_load_drop_and_status_actions(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"x": np.arange(10), "s": [str(i) for i in range(10)]}), path)
    with LocalCache(2, security=ADMIN, load_roots=[str(tmp_path)]) as cache:
        loaded = action(
            cache.endpoint,
            "load",
            {"dataset": "t", "paths": [str(path)], "columns": ["x"], "filter": "x >= 4"},
        )
        assert loaded["rows"] == 6 and loaded["columns"] == ["x"]
        status = action(cache.endpoint, "status")
        assert status["ready"] is True and [d["name"] for d in status["datasets"]] == ["t"]
        assert sum(node["memory"]["used"] for node in status["nodes"]) == 48
        action(cache.endpoint, "drop", {"dataset": "t"})
        status = action(cache.endpoint, "status")
        assert status["datasets"] == [] and all(n["memory"]["used"] == 0 for n in status["nodes"])


def test_the_head_is_ready_only_once_its_expected_datasets_are_loaded() -> None:
    with (
        LocalCache(1, security=ADMIN) as cache,
        HeadServer([cache.nodes[0].location], expect=["d"], connect=AS_ADMIN) as head,
    ):
        assert action(head.location, "status")["ready"] is False
        with pytest.raises(flight.FlightUnavailableError) as caught:
            info(head.location)
        assert retry_after(caught.value) == pytest.approx(0.05)
        head.load_table("d", pa.table({"x": np.arange(10)}))
        assert action(head.location, "status")["ready"] is True
        assert info(head.location).total_records == 10


def test_the_head_waits_for_its_nodes_and_names_one_that_never_answers() -> None:
    with LocalCache(1, security=ADMIN) as cache:
        live, dead = cache.nodes[0].location, "grpc://127.0.0.1:1"
        with HeadServer([live], connect=AS_ADMIN, repair_interval=None) as head:
            head.wait_for_nodes(5.0)  # returns: the node answers
        with (
            HeadServer([live, dead], connect=AS_ADMIN, repair_interval=None) as head,
            pytest.raises(CacheError, match=r"node grpc://127\.0\.0\.1:1"),
        ):
            head.wait_for_nodes(0.3)


def test_a_load_over_the_node_budgets_fails_before_pushing_with_the_numbers() -> None:
    with LocalCache(2, memory_limit=1000) as cache:
        with pytest.raises(MemoryBudgetExceededError, match=r"needs? 4000 bytes.*1000-byte"):
            cache.head.load_table("big", pa.table({"x": np.arange(1000)}))
        assert all(node.budget.usage().used == 0 for node in cache.nodes)


@pytest.mark.parametrize(
    ("kind", "body", "message"),
    [
        pytest.param("load", {"dataset": "t"}, "missing key", id="load-without-paths"),
        pytest.param(
            "load",
            {"dataset": "t", "paths": ["{root}/no/such.parquet"]},
            "does not exist",
            id="missing-file",
        ),
        pytest.param(
            "load", {"dataset": "t", "paths": 5}, "paths: expected a path", id="paths-not-strings"
        ),
        pytest.param(
            "load",
            {"dataset": "t", "paths": ["{root}"], "columns": "x"},
            "columns: expected a list",
            id="columns-not-a-list",
        ),
        pytest.param(
            "load", {"dataset": "t", "paths": ["{root}"], "sql": 1}, "unknown key", id="extra-key"
        ),
        pytest.param("drop", {"dataset": "nope"}, "not loaded", id="drop-unknown"),
        pytest.param("drop", {"dataset": ["x"]}, "name: expected", id="drop-by-a-list"),
        pytest.param("status", None, None, id="status-ok"),
    ],
)
def test_bad_actions_fail_with_a_named_reason(
    replicated: LocalCache,
    tmp_path: Path,
    kind: str,
    body: dict[str, object] | None,
    message: str | None,
) -> None:
    if message is None:
        assert action(replicated.endpoint, kind, body)["ready"] is True
        return
    body = json.loads(json.dumps(body).replace("{root}", str(tmp_path)))
    with pytest.raises(flight.FlightServerError) as caught:
        action(replicated.endpoint, kind, body)
    assert message in str(from_flight_error(caught.value))
    assert "Traceback" not in str(caught.value)


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(
            lambda c: c.do_exchange(flight.FlightDescriptor.for_path("d"))[1].read_all(),
            id="do_exchange",
        ),
        pytest.param(
            lambda c: list(c.do_action(flight.Action("explode", b""))), id="unknown-action"
        ),
        pytest.param(lambda c: c.do_get(flight.Ticket(b"{}")).read_all(), id="do_get-on-head"),
    ],
)
def test_calls_the_head_does_not_serve_answer_unsupported_without_a_traceback(
    replicated: LocalCache, call: Callable[[flight.FlightClient], object]
) -> None:
    with pytest.raises(flight.FlightServerError) as caught:
        call(flight.FlightClient(replicated.endpoint))
    assert isinstance(from_flight_error(caught.value), UnsupportedCallError)
    assert "Traceback" not in str(caught.value) and ".py" not in str(caught.value)


class FailingHead(HeadServer):
    """A head whose ``status`` has a bug."""

    def status(self) -> dict[str, object]:
        raise RuntimeError("a bug in status\n  second line")


def test_a_bug_answers_internal_with_its_first_line_and_no_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with (
        LocalCache(1) as cache,
        FailingHead([cache.nodes[0].location]) as head,
        pytest.raises(flight.FlightInternalError) as caught,
    ):
        action(head.location, "status")
    message = str(caught.value)
    assert "do_action: internal error (RuntimeError: a bug in status)" in message
    assert "Traceback" not in message and "second line" not in message and ".py" not in message
    assert "Traceback" in caplog.text and "a bug in status" in caplog.text


@pytest.mark.parametrize(
    ("security", "connect", "message"),
    [
        pytest.param(ServerSecurity(), AS_ADMIN, "admin calls are off", id="no-admin-token"),
        pytest.param(
            ADMIN, ConnectOptions(), "present the cache's admin token", id="anonymous-caller"
        ),
        pytest.param(
            ServerSecurity(token="read", admin_token=ADMIN_TOKEN),
            ConnectOptions(token="read"),
            "present the cache's admin token",
            id="reader",
        ),
    ],
)
def test_admin_calls_need_the_admin_token(
    tmp_path: Path, security: ServerSecurity, connect: ConnectOptions, message: str
) -> None:
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"x": np.arange(10)}), path)
    with LocalCache(1, security=security, load_roots=[str(tmp_path)]) as cache:
        cache.head.load_table("d", pa.table({"x": np.arange(10)}))
        for kind, body in (
            ("load", {"dataset": "t", "paths": [str(path)]}),
            ("drop", {"dataset": "d"}),
        ):
            with pytest.raises(flight.FlightUnauthorizedError, match=message) as caught:
                action(cache.endpoint, kind, body, connect)
            assert isinstance(from_flight_error(caught.value), AccessDeniedError)
        client = flight.FlightClient(cache.endpoint)
        writer, _ = client.do_put(
            flight.FlightDescriptor.for_path("e"),
            pa.schema([("x", pa.int64())]),
            connect.call_options(),
        )
        with pytest.raises(flight.FlightUnauthorizedError, match=message), writer:
            writer.write_table(pa.table({"x": np.arange(3)}))
        assert [d["name"] for d in cache.head.status()["datasets"]] == ["d"]  # type: ignore[union-attr]
        reader = ConnectOptions(token=security.token)
        assert action(cache.endpoint, "status", None, reader)["datasets"]


def test_remote_loads_stay_within_the_load_roots(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir(), outside.mkdir()
    pq.write_table(pa.table({"x": np.arange(10)}), outside / "secret.parquet")
    pq.write_table(pa.table({"x": np.arange(3)}), root / "ok.parquet")
    (root / "linked").mkdir()
    (root / "linked" / "escape.parquet").symlink_to(outside / "secret.parquet")
    inside = {"dataset": "t", "paths": [str(root / "ok.parquet")]}
    with LocalCache(1, security=ADMIN, load_roots=[str(root)]) as cache:
        for paths in (
            [str(outside / "secret.parquet")],
            [f"{root}/../outside/secret.parquet"],
            [str(root / "linked")],
            [f"file://{outside}/secret.parquet"],
        ):
            with pytest.raises(
                flight.FlightUnauthorizedError, match="outside the head's load roots"
            ):
                action(cache.endpoint, "load", {"dataset": "t", "paths": paths})
        assert cache.head.status()["datasets"] == []
        assert action(cache.endpoint, "load", inside)["rows"] == 3
    with (
        LocalCache(1, security=ADMIN) as cache,
        pytest.raises(flight.FlightUnauthorizedError, match="remote loads are off"),
    ):
        action(cache.endpoint, "load", inside)


def test_a_bearer_token_is_required_when_configured() -> None:
    """Every call, reads too, and the head's calls to its nodes."""
    with LocalCache(1, security=ServerSecurity(token="s3cret")) as cache:
        cache.head.load_table("d", pa.table({"x": np.arange(10)}))
        with pytest.raises(flight.FlightUnauthenticatedError):
            info(cache.endpoint)
        with pytest.raises(flight.FlightUnauthenticatedError):
            next(iter(CacheDataset(cache.endpoint, "d", token="wrong")))
        batch = next(iter(CacheDataset(cache.endpoint, "d", token="s3cret")))
        assert batch["x"].tolist() == list(range(10))


def test_tls_serves_clients_that_trust_the_certificate() -> None:
    certificate, key = _self_signed()
    security = ServerSecurity(certificate=certificate, private_key=key)
    with LocalCache(1, host="localhost", security=security, tls_root_certs=certificate) as cache:
        assert cache.endpoint.startswith("grpc+tls://localhost:")
        cache.head.load_table("d", pa.table({"x": np.arange(10)}))
        batch = next(iter(CacheDataset(cache.endpoint, "d", tls_root_certs=certificate)))
        assert batch["x"].tolist() == list(range(10))


def _self_signed() -> tuple[bytes, bytes]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return (
        certificate.public_bytes(serialization.Encoding.PEM),
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
    )
