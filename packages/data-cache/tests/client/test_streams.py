"""StreamReader: resume after a broken stream, honour retry hints, fail over, give up in time."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.flight as flight
import pytest
from data_cache_testing import ADMIN, AS_ADMIN
from trainer_data_cache import (
    CacheDataset,
    DatasetNotFoundError,
    HeadServer,
    InvalidArgumentError,
    LocalCache,
    NodeServer,
    RetryPolicy,
    StreamFailedError,
)
from trainer_data_cache.client.streams import StreamReader
from trainer_data_cache.connection import ConnectOptions
from trainer_data_cache.tickets import PutRequest, Ticket

ROWS = 1000


class BreakingNode(NodeServer):
    """Breaks each of its first ``breaks`` streams after two batches."""

    def __init__(self, breaks: int, **options: object) -> None:
        self.breaks = breaks
        super().__init__(**options)  # type: ignore[arg-type]

    def _stream(self, held, ticket):  # type: ignore[no-untyped-def]
        inner = super()._stream(held, ticket)
        if self.breaks <= 0:
            return inner
        self.breaks -= 1
        return _broken_after(inner, 2)


def _broken_after(batches: Iterator[pa.RecordBatch], count: int) -> Iterator[pa.RecordBatch]:
    for index, batch in enumerate(batches):
        if index == count:
            batches.close()  # type: ignore[attr-defined]
            raise flight.FlightUnavailableError("node went away")
        yield batch


class FakeTime:
    """A clock that only moves when the reader sleeps; runs ``on_sleep`` at each sleep."""

    def __init__(self, on_sleep=lambda: None) -> None:  # type: ignore[no-untyped-def]
        self.now = 0.0
        self.sleeps: list[float] = []
        self.on_sleep = on_sleep

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        self.on_sleep()


def load(node: NodeServer, rows: int = ROWS) -> Ticket:
    table = pa.table({"x": np.arange(rows)})
    client = flight.FlightClient(node.location)
    request = PutRequest("d", 1, 0, table.nbytes)
    writer, _ = client.do_put(
        flight.FlightDescriptor.for_command(request.to_bytes()),
        table.schema,
        AS_ADMIN.call_options(),
    )
    with writer:
        writer.write_table(table)
    return Ticket("d", 1, 0, 0, 0, ROWS, 0, 64)


def dead_location() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"grpc://127.0.0.1:{port}"


def rows(batches: Iterator[pa.RecordBatch]) -> list[int]:
    return [value for batch in batches for value in batch.column(0).to_pylist()]


def test_a_broken_stream_resumes_from_the_last_delivered_row() -> None:
    fake = FakeTime()
    with BreakingNode(breaks=3, security=ADMIN) as node:
        reader = StreamReader(
            ConnectOptions(),
            RetryPolicy(attempts_per_location=5),
            clock=fake.clock,
            sleep=fake.sleep,
        )
        assert rows(reader.read(load(node), [node.location])) == list(range(ROWS))
    assert reader.retries == 3
    assert fake.sleeps == [0.05, 0.05, 0.05]  # the node's retry hint, not the back-off


def test_a_dead_location_fails_over_to_the_replica() -> None:
    fake = FakeTime()
    with NodeServer(security=ADMIN) as node:
        ticket = load(node)
        reader = StreamReader(
            ConnectOptions(),
            RetryPolicy(attempts_per_location=2, backoff=0.1),
            clock=fake.clock,
            sleep=fake.sleep,
        )
        assert rows(reader.read(ticket, [dead_location(), node.location])) == list(range(ROWS))
    assert fake.sleeps == [0.1, 0.2]  # back-off doubles, then the next location


def test_a_location_without_the_partition_is_skipped_for_one_that_has_it() -> None:
    with NodeServer(security=ADMIN) as empty, NodeServer(security=ADMIN) as node:
        ticket = load(node)
        reader = StreamReader(ConnectOptions(), RetryPolicy())
        assert rows(reader.read(ticket, [empty.location, node.location])) == list(range(ROWS))
        with pytest.raises(DatasetNotFoundError, match="holds no partition 0"):
            list(reader.read(ticket, [empty.location]))


def test_a_full_node_is_retried_after_its_hint() -> None:
    with NodeServer(max_streams=1, security=ADMIN) as node:
        load(node, rows=4_000_000)  # more than gRPC buffers hold, so the stream stays open
        client = flight.FlightClient(node.location)
        held = client.do_get(flight.Ticket(Ticket("d", 1, 0, 0, 0, 4_000_000, 0, 8192).to_bytes()))
        held.read_chunk()
        released = []

        def release() -> None:
            if not released:
                released.append(held.read_all())  # the other stream finishes, freeing a slot

        fake = FakeTime(release)
        reader = StreamReader(ConnectOptions(), RetryPolicy(), clock=fake.clock, sleep=fake.sleep)
        assert rows(reader.read(Ticket("d", 1, 0, 0, 0, ROWS, 0, 64), [node.location])) == list(
            range(ROWS)
        )
    assert fake.sleeps[0] == pytest.approx(0.05)


def test_asking_a_head_that_is_still_loading_waits_for_it() -> None:
    with (
        NodeServer(security=ADMIN) as node,
        HeadServer([node.location], expect=["d"], connect=AS_ADMIN) as head,
    ):
        fake = FakeTime(lambda: head.load_table("d", pa.table({"x": np.arange(ROWS)})))
        reader = StreamReader(ConnectOptions(), RetryPolicy(), clock=fake.clock, sleep=fake.sleep)
        descriptor = flight.FlightDescriptor.for_path("d")
        assert reader.flight_info(head.location, descriptor).total_records == ROWS
    assert fake.sleeps == [pytest.approx(0.05)]


def test_no_reachable_location_ends_in_a_clear_error_after_the_timeout() -> None:
    fake = FakeTime()
    reader = StreamReader(
        ConnectOptions(),
        RetryPolicy(attempts_per_location=1, timeout=1.0),
        clock=fake.clock,
        sleep=fake.sleep,
    )
    ticket = Ticket("d", 1, 0, 0, 0, ROWS, 0, 64)
    locations = [dead_location(), dead_location()]
    with pytest.raises(
        StreamFailedError, match=r"'d': could not read rows 0..1000 from .*within 1 s"
    ):
        list(reader.read(ticket, locations))
    assert sum(fake.sleeps) <= 1.0


@pytest.mark.parametrize(
    ("options", "message"),
    [
        pytest.param({"attempts_per_location": 0}, "attempts_per_location", id="attempts"),
        pytest.param({"backoff": 1.0, "max_backoff": 0.5}, "backoff", id="backoff"),
        pytest.param({"timeout": 0}, "timeout", id="timeout"),
    ],
)
def test_bad_retry_policies_are_named(options: dict[str, float], message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        RetryPolicy(**options)  # type: ignore[arg-type]


def test_a_stream_opened_ahead_is_the_one_read() -> None:
    with NodeServer(security=ADMIN) as node:
        ticket = load(node)
        reader = StreamReader(ConnectOptions(), RetryPolicy())
        reader.open_ahead(ticket, [node.location])
        assert rows(reader.read(ticket, [node.location])) == list(range(ROWS))
        assert node.metrics.snapshot()["streams_started"] == 1  # no second do_get
        reader.close()


def test_a_stream_that_fails_to_open_ahead_fails_over_like_any_attempt() -> None:
    with NodeServer(security=ADMIN) as node:
        ticket = load(node)
        locations = [dead_location(), node.location]
        reader = StreamReader(
            ConnectOptions(), RetryPolicy(attempts_per_location=1, backoff=0.0, max_backoff=0.0)
        )
        reader.open_ahead(ticket, locations)
        assert rows(reader.read(ticket, locations)) == list(range(ROWS))
        reader.close()


def test_closing_the_reader_ends_the_streams_opened_ahead_and_unread(
    wait_until: Callable[[Callable[[], bool], str], None],
) -> None:
    with NodeServer(security=ADMIN) as node:
        ticket = load(node)
        reader = StreamReader(ConnectOptions(), RetryPolicy())
        reader.open_ahead(ticket, [node.location])
        reader.close()
        assert node.metrics.snapshot()["streams_started"] == 1
        wait_until(lambda: node.streams.active == 0, "the node to see the stream cancelled")


def test_a_dataset_opens_the_next_partition_while_it_reads_one(
    wait_until: Callable[[Callable[[], bool], str], None],
) -> None:
    with LocalCache(num_nodes=2, repair_interval=None) as cache:
        cache.head.load_table("t", pa.table({"x": np.arange(ROWS)}))
        batches = iter(CacheDataset(cache.endpoint, "t", batch_rows=100))
        first = next(batches)  # node 0 holds rows 0..499, node 1 rows 500..999
        assert first["x"].tolist() == list(range(100))
        second = cache.nodes[1].metrics
        wait_until(
            lambda: second.snapshot()["streams_started"] == 1,
            "node 1's stream to be opened while node 0's rows are still being read",
        )
        rest = [value for batch in batches for value in batch["x"].tolist()]
        assert rest == list(range(100, ROWS))
        assert second.snapshot()["streams_started"] == 1
