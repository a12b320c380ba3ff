"""The head: loads sources, places partitions on nodes, and answers where rows are."""

from __future__ import annotations

import itertools
import json
import reprlib
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import pyarrow as pa
import pyarrow.flight as flight
import tenacity

from trainer_data_cache import query, sources
from trainer_data_cache.connection import ConnectOptions
from trainer_data_cache.errors import (
    CacheError,
    DatasetNotFoundError,
    InvalidArgumentError,
    MemoryBudgetExceededError,
    UnsupportedCallError,
    from_flight_error,
    unavailable,
)
from trainer_data_cache.filters import Filter, check_filter_shape
from trainer_data_cache.partitions import RowRange, overlapping, shard_range, split_rows
from trainer_data_cache.server.base import (
    CacheServer,
    ServerSecurity,
    json_result,
    translate_errors,
)
from trainer_data_cache.server.repair import NodeHealth, Placed, Repair, holdings, plan_repairs
from trainer_data_cache.server.roots import LoadRoots
from trainer_data_cache.tickets import PutRequest, ReadRequest, Ticket, action_body, check_name

__all__ = ["DEFAULT_REPAIR_INTERVAL", "HeadServer", "plan_endpoints"]

DEFAULT_REPAIR_INTERVAL: Final = 2.0
"""Seconds between the head's placement repair rounds unless told otherwise."""
STATUS_TIMEOUT: Final = 5.0
"""Seconds a node may take to answer ``status`` during a repair round."""
COPY_TIMEOUT: Final = 600.0
"""Seconds the copy of one partition from a replica onto a node may take."""
_COPY_BATCH_ROWS: Final = 65536


@dataclass(frozen=True)
class _Dataset:
    name: str
    generation: int
    schema: pa.Schema
    ranges: tuple[RowRange, ...]
    locations: tuple[tuple[str, ...], ...]
    nbytes: int


def plan_endpoints(
    name: str, generation: int, counts: Sequence[int], request: ReadRequest
) -> tuple[int, list[tuple[int, Ticket]]]:
    """The rows of shard ``request.shard`` and, per partition it touches, the ticket for them.

    ``counts`` are the (filtered) rows of each partition in order; positions are global in the
    filtered order. Batches are cut from the shard's first row on. The cost grows with the
    partitions, not with ``request.num_shards``.
    """
    bases = [0, *itertools.accumulate(counts)]
    total = bases[-1]
    wanted = shard_range(total, request.num_shards, request.shard)
    partitions = [RowRange(bases[index], bases[index + 1]) for index in range(len(counts))]
    tickets = [
        (
            index,
            Ticket(
                dataset=name,
                generation=generation,
                partition=index,
                base=bases[index],
                start=shared.start,
                stop=shared.stop,
                phase=wanted.start,
                batch_rows=request.batch_rows,
                columns=request.columns,
                filter=request.filter,
            ),
        )
        for index, shared in overlapping(partitions, wanted)
    ]
    return len(wanted), tickets


class HeadServer(CacheServer):
    """Knows the datasets and where their partitions live. Each partition goes to ``replicas``
    consecutive nodes, so a reader can fail over when one of them dies. The head is ready once
    no load is running and every dataset named in ``expect`` is loaded.

    Every ``repair_interval`` seconds (None: never) a background round (``reconcile``) asks each
    node what it holds and copies each partition a node should hold but lacks (it restarted
    empty) from a replica that holds it; a node that does not answer is asked again with
    back-off. ``status()["repair"]`` reports it.

    Over Flight, ``load``, ``drop`` and ``do_put`` are admin calls (``ServerSecurity``), and a
    ``load`` must stay within ``load_roots`` (none: remote loads are off); in Python, ``load``
    reads any source its caller names."""

    role = "head"

    def __init__(
        self,
        nodes: Sequence[str],
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        replicas: int = 1,
        retry_after: float = 0.05,
        security: ServerSecurity | None = None,
        connect: ConnectOptions | None = None,
        advertise_host: str | None = None,
        expect: Sequence[str] = (),
        repair_interval: float | None = DEFAULT_REPAIR_INTERVAL,
        load_roots: Sequence[str] = (),
    ) -> None:
        self.load_roots = LoadRoots(tuple(load_roots))
        if not nodes:
            raise InvalidArgumentError("nodes: expected at least one node location")
        if not 1 <= replicas <= len(nodes):
            raise InvalidArgumentError(
                f"replicas: expected 1 <= replicas <= {len(nodes)} nodes, got {replicas}"
            )
        self.nodes = tuple(nodes)
        self.replicas = replicas
        self._retry_after = retry_after
        self._connect = connect = connect or ConnectOptions()
        self._clients = {location: connect.client(location) for location in self.nodes}
        self._datasets: dict[str, _Dataset] = {}
        self._loading: set[str] = set()
        self._expected = set(expect)
        self._generations = itertools.count(1)
        self._lock = threading.Lock()
        # Held while the placement table changes (commit, drop) and while a partition is copied,
        # so that a copy never lands a generation the head has just replaced or dropped.
        self._placing = threading.Lock()
        if repair_interval is not None and not repair_interval > 0:
            raise InvalidArgumentError(
                f"repair_interval: expected seconds > 0 (or None: no repair), got {repair_interval}"
            )
        self._repair_interval = repair_interval
        self._health = NodeHealth(self.nodes, repair_interval or DEFAULT_REPAIR_INTERVAL)
        self._rounds = 0
        self._round_error: str | None = None
        self._stopping = threading.Event()
        super().__init__(host, port, security=security, advertise_host=advertise_host)
        self._repairer: threading.Thread | None = None
        if repair_interval is not None:
            self._repairer = threading.Thread(
                target=self._repair_loop, name="data-cache-repair", daemon=True
            )
            self._repairer.start()

    def shutdown(self) -> None:
        """Stop the repair rounds, then the server."""
        self._stopping.set()
        if self._repairer is not None:
            self._repairer.join(timeout=STATUS_TIMEOUT)
        super().shutdown()

    # Loading -----------------------------------------------------------------------------

    def load(
        self,
        name: str,
        paths: Sequence[str] | str,
        *,
        columns: Sequence[str] | None = None,
        filter: Filter = None,
        format: str | None = None,
        roots: LoadRoots | None = None,
    ) -> dict[str, object]:
        """Read a source (projected and filtered by DataFusion) and place it on the nodes;
        with ``roots``, only a source within them (AccessDeniedError otherwise)."""
        if roots is not None:
            roots.check_paths([paths] if isinstance(paths, str) else paths)
        self._begin(name)
        try:
            source = sources.resolve_source(paths, format)
            if roots is not None:
                roots.check_source(source)
            return self._place(name, sources.read_table(source, columns, filter))
        finally:
            self._end(name)

    def load_table(self, name: str, table: pa.Table) -> dict[str, object]:
        """Place an Arrow table on the nodes as dataset ``name``."""
        self._begin(name)
        try:
            return self._place(name, table)
        finally:
            self._end(name)

    def drop(self, name: str) -> None:
        """Forget dataset ``name`` here and on every node."""
        check_name("name", name)
        with self._placing:
            with self._lock:
                if self._datasets.pop(name, None) is None:
                    raise DatasetNotFoundError(f"dataset {name!r} is not loaded")
            for location in self.nodes:
                self._node_action(location, "drop", {"dataset": name})

    def wait_for_nodes(self, timeout: float) -> None:
        """Return once every node answers ``status``; raise CacheError after ``timeout`` s."""
        deadline = time.monotonic() + timeout
        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception_type(CacheError),
            wait=tenacity.wait_fixed(0.1),
            stop=lambda _: time.monotonic() > deadline,
            reraise=True,
        )
        for location in self.nodes:
            retrying(self._node_action, location, "status", {}, timeout=1.0)

    def _begin(self, name: str) -> None:
        check_name("name", name)
        with self._lock:
            if name in self._loading:
                raise InvalidArgumentError(f"name: dataset {name!r} is already being loaded")
            self._loading.add(name)

    def _end(self, name: str) -> None:
        with self._lock:
            self._loading.discard(name)

    def _place(self, name: str, table: pa.Table) -> dict[str, object]:
        generation = next(self._generations)
        ranges = split_rows(table.num_rows, len(self.nodes))
        placement = [
            tuple(self.nodes[(index + shift) % len(self.nodes)] for shift in range(self.replicas))
            for index in range(len(ranges))
        ]
        pieces = [table.slice(part.start, len(part)) for part in ranges]
        sizes = [piece.nbytes for piece in pieces]
        self._check_budgets(name, placement, sizes)
        for index, (piece, locations) in enumerate(zip(pieces, placement, strict=True)):
            request = PutRequest(name, generation, index, sizes[index], piece.num_rows)
            for location in locations:
                self._push(location, request, piece)
        dataset = _Dataset(
            name, generation, table.schema, tuple(ranges), tuple(placement), sum(sizes)
        )
        with self._placing:
            with self._lock:
                self._datasets[name] = dataset
                self._expected.discard(name)
            for location in self.nodes:
                self._node_action(location, "drop", {"dataset": name, "below": generation})
        return self._describe(dataset)

    def _check_budgets(
        self, name: str, placement: Sequence[tuple[str, ...]], sizes: Sequence[int]
    ) -> None:
        needed = {location: 0 for location in self.nodes}
        for locations, size in zip(placement, sizes, strict=True):
            for location in locations:
                needed[location] += size
        for location, nbytes in needed.items():
            memory = self._node_action(location, "status", {})["memory"]
            free = memory["limit"] - memory["used"]
            if nbytes > free:
                raise MemoryBudgetExceededError(
                    f"dataset {name!r}: node {location} would need {nbytes} bytes but has "
                    f"{free} of its {memory['limit']}-byte memory budget free"
                )

    def _push(self, location: str, request: PutRequest, piece: pa.Table) -> None:
        descriptor = flight.FlightDescriptor.for_command(request.to_bytes())
        try:
            writer, _ = self._clients[location].do_put(
                descriptor, piece.schema, options=self._connect.call_options()
            )
            with writer:
                writer.write_table(piece)
        except flight.FlightError as error:
            raise _node_error(location, error) from error

    def _node_action(
        self, location: str, kind: str, body: dict[str, object], timeout: float | None = None
    ) -> dict[str, Any]:
        action = flight.Action(kind, json.dumps(body).encode())
        try:
            results = list(
                self._clients[location].do_action(action, self._connect.call_options(timeout))
            )
        except flight.FlightError as error:
            raise _node_error(location, error) from error
        document: dict[str, Any] = json.loads(results[0].body.to_pybytes())
        return document

    # Repair ------------------------------------------------------------------------------

    def reconcile(self) -> int:
        """One repair round: ask every node not backing off what it holds, and copy each
        partition a node should hold but lacks from a replica that holds it. Returns how many
        partitions were copied. Level-triggered and idempotent: a round with nothing missing
        copies nothing; a failing node is recorded (with back-off), never raised."""
        held = {}
        for location in self.nodes:
            if not self._health.due(location):
                continue
            try:
                status = self._node_action(location, "status", {}, timeout=STATUS_TIMEOUT)
            except CacheError as error:
                self._node_failed(location, error)
                continue
            held[location] = holdings(status)
        copied = {location: 0 for location in held}
        for repair in plan_repairs(self._placed(), held):
            if repair.target not in copied or not repair.sources:
                continue  # failed earlier in this round, or lost: status lists it
            try:
                copied[repair.target] += self._copy(repair)
            except CacheError as error:
                self._node_failed(repair.target, error)
                del copied[repair.target]
        for location, count in copied.items():
            self._health.succeeded(location, count)
        with self._lock:
            self._rounds += 1
        return sum(copied.values())

    def _repair_loop(self) -> None:
        assert self._repair_interval is not None
        while not self._stopping.wait(self._repair_interval):
            try:
                self.reconcile()
                self._round_error = None
            except Exception as error:  # a bug must not end the rounds; status shows it
                self._round_error = f"{type(error).__name__}: {error}"

    def _placed(self) -> list[Placed]:
        with self._lock:
            datasets = list(self._datasets.values())
        return [
            Placed(dataset.name, dataset.generation, index, len(part), locations)
            for dataset in datasets
            for index, (part, locations) in enumerate(
                zip(dataset.ranges, dataset.locations, strict=True)
            )
        ]

    def _copy(self, repair: Repair) -> int:
        """Stream the partition from the first source that serves it into the target, batch by
        batch (the head never holds it whole; the target refuses a cut-off stream by its row
        count). Returns 1, or 0 if the dataset changed generation meanwhile; raises CacheError
        naming every source's failure."""
        with self._placing:
            with self._lock:
                current = self._datasets.get(repair.dataset)
            if current is None or current.generation != repair.generation:
                return 0
            errors = []
            for source in repair.sources:
                try:
                    self._stream_partition(source, repair)
                    return 1
                except pa.ArrowException as error:
                    errors.append(f"from {source}: {error}")
        raise CacheError(
            f"dataset {repair.dataset!r} partition {repair.partition}: could not copy it onto "
            f"{repair.target}: " + "; ".join(errors)
        )

    def _stream_partition(self, source: str, repair: Repair) -> None:
        ticket = Ticket(
            dataset=repair.dataset,
            generation=repair.generation,
            partition=repair.partition,
            base=0,
            start=0,
            stop=repair.rows,
            phase=0,
            batch_rows=_COPY_BATCH_ROWS,
        )
        put = PutRequest(
            repair.dataset, repair.generation, repair.partition, repair.nbytes, repair.rows
        )
        options = self._connect.call_options(COPY_TIMEOUT)
        reader = self._clients[source].do_get(flight.Ticket(ticket.to_bytes()), options)
        writer, _ = self._clients[repair.target].do_put(
            flight.FlightDescriptor.for_command(put.to_bytes()), reader.schema, options
        )
        with writer:
            while True:
                try:
                    chunk = reader.read_chunk()
                except StopIteration:
                    return
                writer.write_batch(chunk.data)

    def _node_failed(self, location: str, error: CacheError) -> None:
        """Record the failure; a node that did not answer gets a fresh client, so that a node
        restarted at the same address is not hidden behind gRPC's reconnect back-off."""
        self._health.failed(location, str(error))
        if isinstance(error, _NodeUnreachableError):
            self._clients[location] = self._connect.client(location)

    def _repair_status(self, nodes: Sequence[dict[str, Any]]) -> dict[str, object]:
        held = {node["location"]: holdings(node) for node in nodes if "error" not in node}
        missing = plan_repairs(self._placed(), held)
        with self._lock:
            rounds = self._rounds
        nodes_health = self._health.snapshot()
        return {
            "interval": self._repair_interval,
            "rounds": rounds,
            "repaired": self._health.repaired(),
            "complete": len(held) == len(self.nodes) and not missing,
            "error": self._round_error,
            "missing": [repair.describe() for repair in missing],
            "nodes": nodes_health,
        }

    # Flight surface ----------------------------------------------------------------------

    @translate_errors
    def get_flight_info(
        self, context: flight.ServerCallContext, descriptor: flight.FlightDescriptor
    ) -> flight.FlightInfo:
        request = _read_request(descriptor)
        dataset = self._dataset(request.dataset)
        schema = query.check_read(dataset.schema, request.columns, request.filter)
        return _flight_info(
            dataset, schema, descriptor, request, -1, self._counts(dataset, request.filter)
        )

    @translate_errors
    def get_schema(
        self, context: flight.ServerCallContext, descriptor: flight.FlightDescriptor
    ) -> flight.SchemaResult:
        request = _read_request(descriptor)
        schema = query.check_columns(self._dataset(request.dataset).schema, request.columns)
        return flight.SchemaResult(schema)

    @translate_errors
    def list_flights(
        self, context: flight.ServerCallContext, criteria: bytes
    ) -> list[flight.FlightInfo]:
        with self._lock:
            datasets = sorted(self._datasets.values(), key=lambda dataset: dataset.name)
        infos = []
        for dataset in datasets:
            request = ReadRequest(dataset.name)
            descriptor = flight.FlightDescriptor.for_command(request.to_bytes())
            counts = [len(part) for part in dataset.ranges]
            infos.append(
                _flight_info(dataset, dataset.schema, descriptor, request, dataset.nbytes, counts)
            )
        return infos

    @translate_errors
    def do_put(
        self,
        context: flight.ServerCallContext,
        descriptor: flight.FlightDescriptor,
        reader: flight.MetadataRecordBatchReader,
        writer: flight.FlightMetadataWriter,
    ) -> None:
        self.require_admin(context, "do_put")
        if descriptor.descriptor_type == flight.DescriptorType.PATH and len(descriptor.path) == 1:
            name = descriptor.path[0].decode()
        else:
            name = action_body(descriptor.command or b"", ("dataset",))["dataset"]
        self.load_table(name, reader.read_all())

    @translate_errors
    def do_action(
        self, context: flight.ServerCallContext, action: flight.Action
    ) -> list[flight.Result]:
        body = action.body.to_pybytes() if action.body is not None else b""
        if action.type == "status":
            return json_result(self.status())
        if action.type == "load":
            self.require_admin(context, "action 'load'")
            request = _load_request(body)
            return json_result(self.load(**request, roots=self.load_roots))
        if action.type == "drop":
            self.require_admin(context, "action 'drop'")
            self.drop(action_body(body, ("dataset",))["dataset"])
            return json_result({"dropped": True})
        raise UnsupportedCallError(f"action {action.type!r}: the head serves status, load and drop")

    def list_actions(self, context: flight.ServerCallContext) -> list[tuple[str, str]]:
        return [
            ("status", "readiness, datasets and every node's status"),
            ("load", "load a source: {dataset, paths, columns?, filter?, format?}"),
            ("drop", "forget a dataset: {dataset}"),
        ]

    def status(self) -> dict[str, object]:
        """Readiness, datasets, every node's status and the placement repair (``missing``:
        partitions an answering node lacks now; ``complete``: every node answers and holds all
        it should), as a JSON-ready dict."""
        with self._lock:
            datasets = [self._describe(dataset) for _, dataset in sorted(self._datasets.items())]
            loading = sorted(self._loading | self._expected)
        nodes = []
        for location in self.nodes:
            try:
                nodes.append(self._node_action(location, "status", {}, timeout=STATUS_TIMEOUT))
            except CacheError as error:
                nodes.append({"location": location, "error": str(error)})
        reachable = all("error" not in node for node in nodes)
        return {
            "role": "head",
            "location": self.location,
            "ready": not loading and reachable,
            "loading": loading,
            "datasets": datasets,
            "nodes": nodes,
            "repair": self._repair_status(nodes),
        }

    def _describe(self, dataset: _Dataset) -> dict[str, object]:
        return {
            "name": dataset.name,
            "generation": dataset.generation,
            "rows": sum(len(part) for part in dataset.ranges),
            "bytes": dataset.nbytes,
            "columns": dataset.schema.names,
            "partitions": [
                {"start": part.start, "stop": part.stop, "locations": list(locations)}
                for part, locations in zip(dataset.ranges, dataset.locations, strict=True)
            ],
        }

    def _dataset(self, name: str) -> _Dataset:
        with self._lock:
            dataset = self._datasets.get(name)
            loading = name in self._loading or name in self._expected
        if dataset is not None:
            return dataset
        if loading:
            raise unavailable(f"dataset {name!r} is still loading", self._retry_after)
        raise DatasetNotFoundError(
            f"dataset {name!r} is not loaded; loaded: {sorted(self._datasets)}"
        )

    def _counts(self, dataset: _Dataset, row_filter: Filter) -> list[int]:
        if row_filter is None:
            return [len(part) for part in dataset.ranges]
        counts = []
        for index, locations in enumerate(dataset.locations):
            body = {
                "dataset": dataset.name,
                "partition": index,
                "generation": dataset.generation,
                "filter": row_filter,
            }
            counts.append(int(self._first_answer(locations, "count", body)["rows"]))  # type: ignore[call-overload]
        return counts

    def _first_answer(
        self, locations: Sequence[str], kind: str, body: dict[str, object]
    ) -> dict[str, object]:
        errors = []
        for location in locations:
            try:
                return self._node_action(location, kind, body)
            except CacheError as error:
                # A node that restarted empty lacks the partition until repaired: ask a replica.
                if not isinstance(error, (_NodeUnreachableError, DatasetNotFoundError)):
                    raise
                errors.append(str(error))
        raise unavailable("; ".join(errors), self._retry_after)


def _flight_info(
    dataset: _Dataset,
    schema: pa.Schema,
    descriptor: flight.FlightDescriptor,
    request: ReadRequest,
    nbytes: int,
    counts: Sequence[int],
) -> flight.FlightInfo:
    total, tickets = plan_endpoints(dataset.name, dataset.generation, counts, request)
    endpoints = [
        flight.FlightEndpoint(ticket.to_bytes(), list(dataset.locations[index]))
        for index, ticket in tickets
    ]
    return flight.FlightInfo(schema, descriptor, endpoints, total, nbytes)


class _NodeUnreachableError(CacheError):
    """A node did not answer (transport failure, not a refusal)."""


def _node_error(location: str, error: flight.FlightError) -> CacheError:
    typed = from_flight_error(error)
    if typed is not None:
        return typed
    return _NodeUnreachableError(f"node {location}: {error}")


def _load_request(body: bytes) -> dict[str, Any]:
    """The ``load`` action's arguments, each checked for its kind."""
    request = action_body(body, ("dataset", "paths"))
    unknown = sorted(set(request) - {"dataset", "paths", "columns", "filter", "format"})
    if unknown:
        raise InvalidArgumentError(f"action body: unknown key(s) {unknown}")
    given = request["paths"]
    paths = [given] if isinstance(given, str) else given
    if not isinstance(paths, list) or not paths or not all(isinstance(p, str) and p for p in paths):
        raise InvalidArgumentError(
            f"paths: expected a path or URI, or a list of them, got {reprlib.repr(given)}"
        )
    columns = request.get("columns")
    if columns is not None and (
        not isinstance(columns, list) or not all(isinstance(c, str) for c in columns)
    ):
        raise InvalidArgumentError(
            f"columns: expected a list of names, got {reprlib.repr(columns)}"
        )
    source_format = request.get("format")
    if source_format is not None and not isinstance(source_format, str):
        raise InvalidArgumentError(
            f"format: expected a format name, got {reprlib.repr(source_format)}"
        )
    check_filter_shape(request.get("filter"))
    return {
        "name": request["dataset"],
        "paths": paths,
        "columns": columns,
        "filter": request.get("filter"),
        "format": source_format,
    }


def _read_request(descriptor: flight.FlightDescriptor) -> ReadRequest:
    if descriptor.descriptor_type == flight.DescriptorType.PATH and len(descriptor.path) == 1:
        return ReadRequest(descriptor.path[0].decode())
    return ReadRequest.from_bytes(descriptor.command or b"")
