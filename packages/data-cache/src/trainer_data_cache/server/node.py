"""A data node: holds partitions in memory and streams ticket ranges of them."""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

import pyarrow as pa
import pyarrow.flight as flight

from trainer_data_cache import query
from trainer_data_cache.batching import cut_batches, skip_rows, slice_batches
from trainer_data_cache.errors import (
    DatasetNotFoundError,
    InvalidArgumentError,
    StaleTicketError,
    UnsupportedCallError,
    unavailable,
)
from trainer_data_cache.server.base import (
    CacheServer,
    ServerSecurity,
    answering,
    json_result,
    translate_errors,
)
from trainer_data_cache.server.budget import MemoryBudget, StreamCap
from trainer_data_cache.server.metrics import Metrics
from trainer_data_cache.tickets import PutRequest, Ticket, action_body, check_int, check_name

__all__ = ["NodeServer"]

DEFAULT_MEMORY_LIMIT: Final = 8 << 30
"""Bytes a node holds unless told otherwise (8 GiB)."""


@dataclass(frozen=True)
class _Held:
    generation: int
    table: pa.Table
    nbytes: int

    @functools.cached_property
    def whole(self) -> pa.RecordBatch:
        """The partition as one record batch (the table has one chunk per column)."""
        batches = self.table.combine_chunks().to_batches()
        return batches[0] if batches else pa.RecordBatch.from_pylist([], self.table.schema)


class NodeServer(CacheServer):
    """Serves ``do_get`` for its partitions, takes partitions by ``do_put`` from the head, and
    answers the ``status``, ``count`` and ``drop`` actions; ``do_put`` and ``drop`` are admin
    calls (``ServerSecurity``). Other calls answer ``UnsupportedCallError``."""

    role = "node"

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        memory_limit: int = DEFAULT_MEMORY_LIMIT,
        max_streams: int = 64,
        query_memory: int = query.DEFAULT_QUERY_MEMORY,
        retry_after: float = 0.05,
        security: ServerSecurity | None = None,
        advertise_host: str | None = None,
    ) -> None:
        self.budget = MemoryBudget(memory_limit)
        self.streams = StreamCap(max_streams)
        if query_memory < 0:
            raise InvalidArgumentError(f"query_memory: expected bytes >= 0, got {query_memory}")
        self._query_memory = query_memory
        self.metrics = Metrics()
        self._retry_after = retry_after
        self._held: dict[tuple[str, int], _Held] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        super().__init__(host, port, security=security, advertise_host=advertise_host)

    def shutdown(self) -> None:
        """End the streams at their next batch (Unavailable: readers go to a replica or retry),
        then stop the server once every call has returned."""
        self._stopping.set()
        super().shutdown()

    @translate_errors
    def do_put(
        self,
        context: flight.ServerCallContext,
        descriptor: flight.FlightDescriptor,
        reader: flight.MetadataRecordBatchReader,
        writer: flight.FlightMetadataWriter,
    ) -> None:
        self.require_admin(context, "do_put")
        request = PutRequest.from_bytes(descriptor.command or b"")
        what = f"dataset {request.dataset!r} partition {request.partition}"
        self.budget.reserve(request.nbytes, what)
        nbytes = request.nbytes
        try:
            table = reader.read_all().combine_chunks()
            if request.rows is not None and table.num_rows != request.rows:
                raise InvalidArgumentError(
                    f"{what}: the stream ended after {table.num_rows} of {request.rows} rows"
                )
            if table.nbytes > nbytes:  # the sender understated the size: take the rest too
                self.budget.reserve(table.nbytes - nbytes, what)
                nbytes = table.nbytes
        except BaseException:
            self.budget.release(nbytes)
            raise
        key = (request.dataset, request.partition)
        with self._lock:
            previous = self._held.get(key)
            newer = previous is not None and previous.generation > request.generation
            if not newer:
                self._held[key] = _Held(request.generation, table, nbytes)
        if newer:  # a late copy of an older generation: keep the newer one
            self.budget.release(nbytes)
            raise StaleTicketError(
                f"{what}: node {self.location} holds a newer generation than {request.generation}"
            )
        if previous is not None:
            self.budget.release(previous.nbytes)

    @translate_errors
    def do_get(
        self, context: flight.ServerCallContext, ticket: flight.Ticket
    ) -> flight.FlightDataStream:
        request = Ticket.from_bytes(ticket.ticket)
        held = self._partition(request.dataset, request.partition, request.generation)
        schema = query.check_read(held.table.schema, request.columns, request.filter)
        if not self.streams.try_open():
            self.metrics.stream_refused()
            raise unavailable(
                f"node {self.location} is serving its limit of {self.streams.limit} streams",
                self._retry_after,
            )
        self.metrics.stream_started()
        return flight.GeneratorStream(schema, self._stream(held, request))

    def _stream(self, held: _Held, ticket: Ticket) -> Iterator[pa.RecordBatch]:
        memory = self.budget.take_up_to(self._query_memory) if ticket.filter is not None else 0
        try:
            with answering("do_get"):
                for batch in self._batches(held, ticket, memory):
                    if self._stopping.is_set():
                        raise unavailable(
                            f"node {self.location} is shutting down", self._retry_after
                        )
                    self.metrics.served(batch.num_rows, batch.nbytes)
                    yield batch
        finally:
            self.budget.release(memory)
            self.streams.close()

    @staticmethod
    def _batches(held: _Held, ticket: Ticket, memory: int) -> Iterator[pa.RecordBatch]:
        """The ticket's rows cut on its batch boundaries: zero-copy slices of the partition
        without a filter (no query, no per-batch work but the slice), else from DataFusion
        under a ``memory``-byte pool."""
        start, stop = ticket.start - ticket.base, ticket.stop - ticket.base
        if ticket.filter is None:
            whole = held.whole if ticket.columns is None else held.whole.select(ticket.columns)
            return slice_batches(whole, start, stop, ticket.phase - ticket.base, ticket.batch_rows)
        frame = query.plan(held.table, ticket.columns, ticket.filter, ticket.batch_rows, memory)
        rows = skip_rows(query.stream_batches(frame), start, stop - start)
        return cut_batches(rows, ticket.start, ticket.phase, ticket.batch_rows)

    @translate_errors
    def do_action(
        self, context: flight.ServerCallContext, action: flight.Action
    ) -> list[flight.Result]:
        body = action.body.to_pybytes() if action.body is not None else b""
        if action.type == "status":
            return json_result(self.status())
        if action.type == "count":
            request = action_body(body, ("dataset", "partition", "generation"))
            check_name("dataset", request["dataset"])
            check_int("partition", request["partition"], 0)
            check_int("generation", request["generation"], 0)
            held = self._partition(request["dataset"], request["partition"], request["generation"])
            memory = self.budget.take_up_to(self._query_memory)
            try:
                rows = query.count_rows(held.table, request.get("filter"), memory)
            finally:
                self.budget.release(memory)
            return json_result({"rows": rows})
        if action.type == "drop":
            self.require_admin(context, "action 'drop'")
            request = action_body(body, ("dataset",))
            check_name("dataset", request["dataset"])
            if request.get("below") is not None:
                check_int("below", request["below"], 0)
            return json_result({"dropped": self.drop(request["dataset"], request.get("below"))})
        raise UnsupportedCallError(f"action {action.type!r}: a node serves status, count and drop")

    def list_actions(self, context: flight.ServerCallContext) -> list[tuple[str, str]]:
        return [
            ("status", "memory, streams, metrics and held partitions"),
            ("count", "rows of one partition a filter keeps"),
            ("drop", "forget a dataset's partitions"),
        ]

    def drop(self, dataset: str, below: int | None = None) -> int:
        """Forget ``dataset``'s partitions (only generations older than ``below`` when given)."""
        with self._lock:
            keys = [
                key
                for key, held in self._held.items()
                if key[0] == dataset and (below is None or held.generation < below)
            ]
            removed = [self._held.pop(key) for key in keys]
        for held in removed:
            self.budget.release(held.nbytes)
        return len(removed)

    def status(self) -> dict[str, object]:
        """Memory, streams, counters and the partitions held, as a JSON-ready dict."""
        usage = self.budget.usage()
        with self._lock:
            partitions = [
                {
                    "dataset": key[0],
                    "partition": key[1],
                    "generation": held.generation,
                    "rows": held.table.num_rows,
                    "bytes": held.nbytes,
                }
                for key, held in sorted(self._held.items())
            ]
        return {
            "role": "node",
            "location": self.location,
            "memory": {"limit": usage.limit, "used": usage.used},
            "active_streams": self.streams.active,
            "max_streams": self.streams.limit,
            "metrics": self.metrics.snapshot(),
            "partitions": partitions,
        }

    def _partition(self, dataset: str, partition: int, generation: int) -> _Held:
        with self._lock:
            held = self._held.get((dataset, partition))
        if held is None:
            raise DatasetNotFoundError(
                f"dataset {dataset!r}: node {self.location} holds no partition {partition}"
            )
        if held.generation != generation:
            raise StaleTicketError(
                f"dataset {dataset!r}: ticket is for generation {generation} but node "
                f"{self.location} holds generation {held.generation}; ask the head again"
            )
        return held
