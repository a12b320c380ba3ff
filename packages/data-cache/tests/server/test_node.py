"""A node over loopback: partitions in, ranges out, budget, stream cap, back-pressure."""

from __future__ import annotations

import json
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.flight as flight
import pytest
from data_cache_testing import ADMIN, AS_ADMIN
from trainer_data_cache import (
    AccessDeniedError,
    MemoryBudgetExceededError,
    NodeServer,
    ServerSecurity,
    StaleTicketError,
    UnsupportedCallError,
)
from trainer_data_cache.errors import from_flight_error, retry_after
from trainer_data_cache.tickets import PutRequest, Ticket


def put(node: NodeServer, table: pa.Table, generation: int = 1, partition: int = 0) -> None:
    client = flight.FlightClient(node.location)
    request = PutRequest("d", generation, partition, table.nbytes)
    writer, _ = client.do_put(
        flight.FlightDescriptor.for_command(request.to_bytes()),
        table.schema,
        AS_ADMIN.call_options(),
    )
    with writer:
        writer.write_table(table)


def ticket(stop: int, *, start: int = 0, batch_rows: int = 4, **fields: object) -> flight.Ticket:
    document = Ticket(
        "d",
        fields.pop("generation", 1),
        0,
        0,
        start,
        stop,  # type: ignore[arg-type]
        fields.pop("phase", 0),
        batch_rows,
        **fields,
    )  # type: ignore[arg-type]
    return flight.Ticket(document.to_bytes())


@pytest.fixture
def node() -> NodeServer:
    with NodeServer(memory_limit=1 << 30, max_streams=2, security=ADMIN) as server:
        yield server


@pytest.mark.parametrize(
    ("start", "stop", "phase", "sizes"),
    [
        pytest.param(0, 10, 0, [4, 4, 2], id="aligned"),
        pytest.param(3, 10, 0, [1, 4, 2], id="first-batch-short-to-reach-a-boundary"),
        pytest.param(3, 10, 3, [4, 3], id="phase-at-start"),
        pytest.param(5, 5, 0, [], id="empty-range"),
    ],
)
def test_do_get_cuts_batches_on_the_ticket_boundaries(
    node: NodeServer, start: int, stop: int, phase: int, sizes: list[int]
) -> None:
    put(node, pa.table({"x": np.arange(10)}))
    reader = flight.FlightClient(node.location).do_get(
        ticket(stop, start=start, phase=phase, batch_rows=4)
    )
    batches = list(reader)
    assert [chunk.data.num_rows for chunk in batches] == sizes
    assert [v for chunk in batches for v in chunk.data.column(0).to_pylist()] == list(
        range(start, stop)
    )


def test_do_get_filters_and_projects_with_positions_in_the_filtered_rows(node: NodeServer) -> None:
    put(node, pa.table({"x": np.arange(20), "y": np.arange(20) * 10}))
    reader = flight.FlightClient(node.location).do_get(
        ticket(6, start=2, batch_rows=3, columns=["y"], filter="x % 2 = 1")
    )
    table = reader.read_all()
    assert table.schema.names == ["y"]
    assert table.column("y").to_pylist() == [50, 70, 90, 110]


def test_a_put_over_the_memory_budget_fails_with_the_numbers() -> None:
    with NodeServer(memory_limit=1000, security=ADMIN) as node:
        with pytest.raises(flight.FlightServerError) as caught:
            put(node, pa.table({"x": np.arange(1000)}))
        error = from_flight_error(caught.value)
        assert isinstance(error, MemoryBudgetExceededError)
        assert "needs 8000 bytes" in str(error) and "1000-byte memory budget" in str(error)
        assert node.status()["memory"] == {"limit": 1000, "used": 0}


def test_a_put_that_understates_its_size_is_charged_what_it_holds() -> None:
    table = pa.table({"x": np.arange(100)})
    with NodeServer(memory_limit=500, security=ADMIN) as node:
        client = flight.FlightClient(node.location)
        request = PutRequest("d", 1, 0, 10)
        writer, _ = client.do_put(
            flight.FlightDescriptor.for_command(request.to_bytes()),
            table.schema,
            AS_ADMIN.call_options(),
        )
        with pytest.raises(flight.FlightServerError, match="needs 790 bytes"), writer:
            writer.write_table(table)
        assert node.status()["memory"]["used"] == 0


def test_a_newer_generation_replaces_the_partition_and_stale_tickets_are_refused(
    node: NodeServer,
) -> None:
    put(node, pa.table({"x": np.arange(10)}), generation=1)
    put(node, pa.table({"x": np.arange(5)}), generation=2)
    assert node.status()["memory"]["used"] == 40
    with pytest.raises(flight.FlightServerError) as caught:
        flight.FlightClient(node.location).do_get(ticket(5, generation=1)).read_all()
    assert isinstance(from_flight_error(caught.value), StaleTicketError)


def test_streams_over_the_cap_are_refused_as_unavailable_with_a_retry_hint(
    node: NodeServer, wait_until: Callable[[Callable[[], bool], str], None]
) -> None:
    put(node, pa.table({"x": np.arange(4_000_000)}))
    client = flight.FlightClient(node.location)
    held = [client.do_get(ticket(4_000_000, batch_rows=1024)) for _ in range(2)]
    for reader in held:
        reader.read_chunk()
    with pytest.raises(flight.FlightUnavailableError) as caught:
        client.do_get(ticket(4, batch_rows=1024)).read_all()
    assert retry_after(caught.value) == pytest.approx(0.05)
    assert node.status()["metrics"]["streams_refused"] == 1
    del held, reader
    wait_until(lambda: node.streams.active == 0, "the held streams are closed")
    assert client.do_get(ticket(4, batch_rows=1024)).read_all().num_rows == 4


def test_a_slow_reader_keeps_what_the_node_produces_bounded(
    node: NodeServer, wait_until: Callable[[Callable[[], bool], str], None]
) -> None:
    rows = 8_000_000  # 128 MB, well above what the transport holds in flight
    put(node, pa.table({"x": np.arange(rows), "y": np.ones(rows)}))
    client = flight.FlightClient(node.location)
    slow = client.do_get(ticket(rows, batch_rows=8192))
    try:
        read_bytes = sum(slow.read_chunk().data.nbytes for _ in range(2))
        # While the slow stream waits, a fast one reads everything: the node had time to run
        # ahead. The fast reader has its own connection: on the slow reader's, the fast
        # transfer would widen gRPC's flow-control window (BDP probing) and with it what the
        # slow stream may buffer in transit, which is gRPC's, not the node's. The fast call's
        # server side ends just after its last batch reached the client.
        fast = flight.FlightClient(node.location)
        try:
            assert fast.do_get(ticket(rows, batch_rows=8192)).read_all().num_rows == rows
        finally:
            fast.close()
        wait_until(lambda: node.status()["active_streams"] == 1, "the fast stream has ended")
        ahead = node.metrics.snapshot()["bytes_served"] - rows * 16 - read_bytes
        # What a stalled stream holds is what gRPC's flow-control windows and loopback TCP's
        # auto-tuned buffers accept (up to 37 MB seen here), not the partition.
        assert 0 <= ahead <= 48 << 20, f"the node produced {ahead} bytes the slow reader never read"
    finally:  # a stalled stream left open would hold the node's shutdown
        slow.cancel()
        client.close()


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda c: list(c.list_flights()), id="list_flights"),
        pytest.param(
            lambda c: c.get_flight_info(flight.FlightDescriptor.for_path("d")), id="get_flight_info"
        ),
        pytest.param(
            lambda c: list(c.do_action(flight.Action("load", b"{}"))), id="unknown-action"
        ),
        pytest.param(
            lambda c: c.do_exchange(flight.FlightDescriptor.for_path("d"))[1].read_all(),
            id="do_exchange",
        ),
    ],
)
def test_calls_a_node_does_not_serve_answer_unsupported_without_a_traceback(
    node: NodeServer, call: Callable[[flight.FlightClient], object]
) -> None:
    with pytest.raises(flight.FlightServerError) as caught:
        call(flight.FlightClient(node.location))
    assert isinstance(from_flight_error(caught.value), UnsupportedCallError)
    assert "node does not serve" in str(caught.value) or "a node serves" in str(caught.value)
    assert "Traceback" not in str(caught.value)
    assert node.status()["role"] == "node"


@pytest.mark.parametrize(
    ("security", "message"),
    [
        pytest.param(ServerSecurity(), "admin calls are off", id="no-admin-token"),
        pytest.param(ADMIN, "present the cache's admin token", id="admin-token"),
    ],
)
def test_puts_and_drops_without_the_admin_token_are_refused_and_reads_are_not(
    security: ServerSecurity, message: str
) -> None:
    table = pa.table({"x": np.arange(10)})
    with NodeServer(security=security) as node:
        client = flight.FlightClient(node.location)
        request = PutRequest("d", 1, 0, table.nbytes)
        writer, _ = client.do_put(
            flight.FlightDescriptor.for_command(request.to_bytes()), table.schema
        )
        with pytest.raises(flight.FlightUnauthorizedError, match=f"do_put: .*{message}"), writer:
            writer.write_table(table)
        assert node.status()["partitions"] == []
        with pytest.raises(flight.FlightUnauthorizedError) as caught:
            list(client.do_action(flight.Action("drop", json.dumps({"dataset": "d"}).encode())))
        assert isinstance(from_flight_error(caught.value), AccessDeniedError)
        assert (
            json.loads(
                next(iter(client.do_action(flight.Action("status", b"")))).body.to_pybytes()
            )["role"]
            == "node"
        )


def test_status_reports_memory_streams_metrics_and_partitions(node: NodeServer) -> None:
    put(node, pa.table({"x": np.arange(10)}))
    flight.FlightClient(node.location).do_get(ticket(10)).read_all()
    result = list(flight.FlightClient(node.location).do_action(flight.Action("status", b"")))
    status = json.loads(result[0].body.to_pybytes())
    assert status["memory"]["used"] == 80
    assert status["metrics"]["rows_served"] == 10 and status["metrics"]["bytes_served"] == 80
    assert status["partitions"] == [
        {"dataset": "d", "partition": 0, "generation": 1, "rows": 10, "bytes": 80}
    ]


def test_a_late_put_of_an_older_generation_keeps_the_newer_one(node: NodeServer) -> None:
    put(node, pa.table({"x": np.arange(6)}), generation=3)
    with pytest.raises(flight.FlightServerError) as caught:
        put(node, pa.table({"x": np.arange(2)}), generation=2)
    assert isinstance(from_flight_error(caught.value), StaleTicketError)
    assert "newer generation than 2" in str(caught.value)
    (held,) = node.status()["partitions"]  # type: ignore[misc]
    assert (held["generation"], held["rows"]) == (3, 6)
    assert node.status()["memory"]["used"] == 48


def test_a_put_that_ends_short_of_its_rows_is_refused_and_holds_nothing(node: NodeServer) -> None:
    table = pa.table({"x": np.arange(3)})
    request = PutRequest("d", 1, 0, table.nbytes, rows=5)
    client = flight.FlightClient(node.location)
    writer, _ = client.do_put(
        flight.FlightDescriptor.for_command(request.to_bytes()),
        table.schema,
        AS_ADMIN.call_options(),
    )
    with pytest.raises(flight.FlightServerError, match="ended after 3 of 5 rows"), writer:
        writer.write_table(table)
    assert (node.status()["partitions"], node.status()["memory"]["used"]) == ([], 0)


def test_a_filtered_stream_holds_its_query_pool_inside_the_budget_until_it_ends() -> None:
    table = pa.table({"x": np.arange(100)})
    pool = 4096
    with NodeServer(memory_limit=table.nbytes + pool, query_memory=pool, security=ADMIN) as node:
        put(node, table)
        client = flight.FlightClient(node.location)
        reader = client.do_get(ticket(100, batch_rows=10, filter="x >= 0"))
        reader.read_chunk()
        assert node.status()["memory"]["used"] == table.nbytes + pool  # partition + one pool
        assert reader.read_all().num_rows == 90
        assert node.status()["memory"]["used"] == table.nbytes
        plain = client.do_get(ticket(100, batch_rows=10))  # no filter: no query, no pool
        plain.read_chunk()
        assert node.status()["memory"]["used"] == table.nbytes
        assert plain.read_all().num_rows == 90


def test_a_hostile_filter_is_refused_and_the_node_keeps_serving(node: NodeServer) -> None:
    put(node, pa.table({"x": np.arange(10), "s": [str(i) for i in range(10)]}))
    client = flight.FlightClient(node.location)
    benign = json.dumps("x >= 0").encode()
    for hostile in ("length(repeat(s, 100000)) > 0", "lpad(s, 100000) = 'x'"):
        # Written by hand, as an attacker would: the client library refuses to make it.
        raw = ticket(10, filter="x >= 0").ticket.replace(benign, json.dumps(hostile).encode())
        with pytest.raises(flight.FlightServerError, match="is not allowed"):
            client.do_get(flight.Ticket(raw)).read_all()
        body = {"dataset": "d", "partition": 0, "generation": 1, "filter": hostile}
        count = flight.Action("count", json.dumps(body).encode())
        with pytest.raises(flight.FlightServerError, match="is not allowed"):
            list(client.do_action(count))
    assert client.do_get(ticket(10, filter="x >= 5")).read_all().num_rows == 5
