"""``CacheDataset``: a torch IterableDataset of exact, disjoint, resumable shards of a cache."""

from __future__ import annotations

import os
from collections.abc import Generator, Iterator, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass, replace
from typing import Any, Final

import pyarrow as pa
import pyarrow.flight as flight
import torch
import torch.distributed as dist
from data_cache_manifests import DATASET_ENV, ENDPOINT_ENV, TOKEN_ENV
from torch.utils.data import IterableDataset, get_worker_info

from trainer_data_cache.batching import cut_batches
from trainer_data_cache.client.pool import ClientPool
from trainer_data_cache.client.sharding import Consumer, Even, merge_ranges, plan_batches
from trainer_data_cache.client.streams import RetryPolicy, StreamReader
from trainer_data_cache.client.tensors import check_tensor_schema, to_tensors
from trainer_data_cache.connection import ConnectOptions
from trainer_data_cache.errors import InvalidArgumentError, InvalidStateError
from trainer_data_cache.filters import Filter, check_filter_shape
from trainer_data_cache.partitions import RowRange
from trainer_data_cache.tickets import ReadRequest, Ticket

__all__ = ["CacheDataset"]

STATE_VERSION: Final = 1

_Piece = tuple[Ticket, tuple[str, ...]]
"""A partition's ticket for some rows, and the locations that hold the partition."""


@dataclass(frozen=True)
class _Layout:
    """Where the rows are: total (filtered) rows and, per partition, its ticket and locations."""

    total: int
    pieces: tuple[_Piece, ...]


class CacheDataset(IterableDataset[dict[str, torch.Tensor]]):
    """Batches of a cached dataset as dicts of column name to tensor.

    Every (rank, DataLoader worker) reads a disjoint share and together they read every row once
    (see ``trainer_data_cache.client.sharding``). Rank and world size come from the arguments,
    else from torch.distributed when initialised, else from ``RANK`` / ``WORLD_SIZE``; they are
    resolved here, in the parent process. The Flight clients (one per head or node) stay open
    between iterations in the process that made them (``trainer_data_cache.client.pool``) and are
    closed by ``close``, the end of a ``with`` block, or when the dataset is dropped; before
    this process forks they are closed if no iteration runs, so DataLoader workers (fork or
    spawn) each make their own, and a worker forked after a read in the parent works; one forked
    while a read is open raises ``UnsafeForkError`` (see ``trainer_data_cache.forks``) instead of
    hanging.
    """

    def __init__(
        self,
        endpoint: str,
        dataset: str,
        *,
        columns: Sequence[str] | None = None,
        filter: Filter = None,
        batch_rows: int = 1024,
        shuffle: bool = False,
        seed: int = 0,
        even: Even = None,
        rank: int | None = None,
        world_size: int | None = None,
        fill_values: Mapping[str, object] | None = None,
        token: str | None = None,
        tls_root_certs: bytes | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        super().__init__()
        if not isinstance(endpoint, str) or "://" not in endpoint:
            raise InvalidArgumentError(
                f"endpoint: expected a URI such as grpc://host:port, got {endpoint!r}"
            )
        if isinstance(columns, str):
            raise InvalidArgumentError("columns: expected a list of column names, not one string")
        if isinstance(batch_rows, bool) or not isinstance(batch_rows, int) or batch_rows < 1:
            raise InvalidArgumentError(f"batch_rows: expected an integer >= 1, got {batch_rows!r}")
        if even not in (None, "drop", "pad"):
            raise InvalidArgumentError(f"even: expected 'drop', 'pad' or None, got {even!r}")
        check_filter_shape(filter)
        self.endpoint = endpoint
        self.request = ReadRequest(
            dataset,
            columns=list(columns) if columns is not None else None,
            filter=filter,
            batch_rows=batch_rows,
        )
        self.shuffle = shuffle
        self.seed = seed
        self.even = even
        self.rank, self.world_size = _rank_and_world(rank, world_size)
        Consumer(self.rank, self.world_size)  # checks the pair
        self.fill_values = dict(fill_values or {})
        self.connect = ConnectOptions(token=token, tls_root_certs=tls_root_certs)
        self.retry = retry or RetryPolicy()
        # Shared with DataLoader workers (also persistent ones) through shared memory.
        self._epoch = torch.zeros((), dtype=torch.int64).share_memory_()
        self._resume_epoch = torch.full((), -1, dtype=torch.int64).share_memory_()
        self._resume: dict[str, int] = {}
        self._rotation = 0
        self._delivered: dict[str, int] = {}
        self._retries = 0
        self._pool = ClientPool(self.connect)

    def close(self) -> None:
        """Close the Flight clients kept between iterations (a later iteration reopens them)."""
        self._pool.close()

    def __enter__(self) -> CacheDataset:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def __del__(self) -> None:
        pool = self.__dict__.get("_pool")
        if pool is not None:
            pool.close()

    def __getstate__(self) -> dict[str, Any]:
        """Pickled (spawned DataLoader workers) without the clients: the copy makes its own."""
        state = self.__dict__.copy()
        state["_pool"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._pool = ClientPool(self.connect)

    @classmethod
    def from_env(cls, **options: Any) -> CacheDataset:
        """The job's cache as its controller announced it: endpoint from ``DATA_CACHE_ENDPOINT``,
        dataset from ``DATA_CACHE_DATASET``, token from ``DATA_CACHE_TOKEN`` when set
        (``options`` as for the constructor; a ``token`` there wins)."""
        values = {name: os.environ.get(name) for name in (ENDPOINT_ENV, DATASET_ENV)}
        missing = [name for name, value in values.items() if not value]
        if missing:
            raise InvalidArgumentError(
                f"{', '.join(missing)}: not set; does this job use the "
                "torch-distributed-with-cache runtime?"
            )
        options.setdefault("token", os.environ.get(TOKEN_ENV) or None)
        return cls(values[ENDPOINT_ENV], values[DATASET_ENV], **options)  # type: ignore[arg-type]

    # Epochs and state ---------------------------------------------------------------------

    def set_epoch(self, epoch: int) -> None:
        """Use the shuffle order of ``epoch``; the same on every rank and in every worker."""
        if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 0:
            raise InvalidArgumentError(f"epoch: expected an integer >= 0, got {epoch!r}")
        self._epoch.fill_(epoch)

    @property
    def epoch(self) -> int:
        return int(self._epoch.item())

    @property
    def retries(self) -> int:
        """How many times this process reopened a broken or refused stream, over the
        iterations that have ended."""
        return self._retries

    def state_dict(self) -> dict[str, Any]:
        """Where this process (or DataLoader worker) is in the epoch; see ``load_state_dict``."""
        return self._state(dict(self._delivered))

    def loader_state_dict(self, batches_consumed: int, num_workers: int) -> dict[str, Any]:
        """The state after a plain DataLoader with ``num_workers`` workers yielded
        ``batches_consumed`` batches of this epoch (its workers take turns in order)."""
        if batches_consumed < 0:
            raise InvalidArgumentError(f"batches_consumed: expected >= 0, got {batches_consumed}")
        if num_workers < 0:
            raise InvalidArgumentError(f"num_workers: expected >= 0, got {num_workers}")
        workers = max(1, num_workers)
        rounds, extra = divmod(batches_consumed, workers)
        state = self._state({str(w): rounds + (1 if w < extra else 0) for w in range(workers)})
        # The resumed loader starts its turns at worker 0; let that be the worker whose turn
        # was next.
        state["rotation"] = extra
        return state

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Resume exactly where ``state`` was taken: the next iteration of that epoch skips the
        batches each worker had already delivered."""
        expected = self._state({})
        if not isinstance(state, Mapping):
            raise InvalidStateError(f"state: expected a mapping, got {type(state).__name__}")
        for key in (
            "version",
            "dataset",
            "rank",
            "world_size",
            "batch_rows",
            "shuffle",
            "seed",
            "even",
            "filter",
            "columns",
        ):
            if state.get(key) != expected[key]:
                raise InvalidStateError(
                    f"state.{key}: saved {state.get(key)!r} but this dataset has {expected[key]!r}"
                )
        batches = state.get("batches")
        if not isinstance(batches, Mapping) or not all(
            isinstance(count, int) and count >= 0 for count in batches.values()
        ):
            raise InvalidStateError("state.batches: expected a mapping of worker to batch count")
        epoch = state.get("epoch")
        if not isinstance(epoch, int) or epoch < 0:
            raise InvalidStateError(f"state.epoch: expected an integer >= 0, got {epoch!r}")
        self._epoch.fill_(epoch)
        self._resume_epoch.fill_(epoch)
        rotation = state.get("rotation", 0)
        if not isinstance(rotation, int) or rotation < 0:
            raise InvalidStateError(f"state.rotation: expected an integer >= 0, got {rotation!r}")
        self._resume = {str(worker): count for worker, count in batches.items()}
        self._rotation = rotation
        self._delivered = dict(self._resume)

    def _state(self, batches: dict[str, int]) -> dict[str, Any]:
        return {
            "version": STATE_VERSION,
            "dataset": self.request.dataset,
            "epoch": self.epoch,
            "rank": self.rank,
            "world_size": self.world_size,
            "batch_rows": self.request.batch_rows,
            "shuffle": self.shuffle,
            "seed": self.seed,
            "even": self.even,
            "filter": self.request.filter,
            "columns": self.request.columns,
            "batches": batches,
        }

    # Iteration ----------------------------------------------------------------------------

    def __iter__(self) -> Iterator[dict[str, torch.Tensor]]:
        info = get_worker_info()
        worker, num_workers = (info.id, info.num_workers) if info is not None else (0, 1)
        epoch = self.epoch
        resuming = int(self._resume_epoch.item()) == epoch
        if resuming:
            worker = (worker + self._rotation) % num_workers
        consumer = Consumer(self.rank, self.world_size, worker, num_workers)
        key = str(worker)
        skip = self._resume.get(key, 0) if resuming else 0
        reader = StreamReader(self.connect, self.retry, pool=self._pool)
        try:
            layout = self._layout(reader)
            batches = plan_batches(
                layout.total,
                self.request.batch_rows,
                consumer,
                shuffle=self.shuffle,
                seed=self.seed,
                epoch=epoch,
                even=self.even,
            )
            self._delivered[key] = skip
            with closing(self._read(reader, layout, batches[skip:])) as stream:
                for batch in stream:
                    self._delivered[key] += 1
                    yield to_tensors(batch, self.fill_values)
        finally:
            # The clients go back to the pool: idle, so a fork closes them first.
            self._retries += reader.retries
            reader.close()

    def _read(
        self, reader: StreamReader, layout: _Layout, batches: list[RowRange]
    ) -> Generator[pa.RecordBatch, None, None]:
        spans = [(span, _pieces(layout, span)) for span in merge_ranges(batches)]
        following = iter([piece for _, pieces in spans for piece in pieces][1:])
        for span, pieces in spans:
            yield from cut_batches(
                _read_ahead(reader, pieces, following), span.start, 0, self.request.batch_rows
            )

    def _layout(self, reader: StreamReader) -> _Layout:
        descriptor = flight.FlightDescriptor.for_command(self.request.to_bytes())
        info = reader.flight_info(self.endpoint, descriptor)
        check_tensor_schema(info.schema)
        pieces = tuple(
            (
                Ticket.from_bytes(endpoint.ticket.ticket),
                tuple(location.uri.decode() for location in endpoint.locations),
            )
            for endpoint in info.endpoints
        )
        return _Layout(info.total_records, pieces)


def _read_ahead(
    reader: StreamReader, pieces: list[_Piece], following: Iterator[_Piece]
) -> Iterator[pa.RecordBatch]:
    """The batches of ``pieces``, in order; once each one's first batch has arrived, the next of
    ``following`` (the iteration's later pieces) is opened ahead, so no piece waits for its
    stream to open. Not sooner: a second stream sending beside the first one's first batch
    delays that batch (by about 7 ms on 2 cores, which is the pass's time to its first batch)."""
    for ticket, locations in pieces:
        upcoming = next(following, None)
        batches = reader.read(ticket, locations)
        first = next(batches, None)
        if upcoming is not None:
            reader.open_ahead(*upcoming)
        if first is not None:
            yield first
            yield from batches


def _pieces(layout: _Layout, span: RowRange) -> list[_Piece]:
    """The part of each partition's ticket inside ``span``, batch-cut from row 0."""
    pieces = []
    for ticket, locations in layout.pieces:
        start, stop = max(ticket.start, span.start), min(ticket.stop, span.stop)
        if start < stop:
            pieces.append((replace(ticket, start=start, stop=stop, phase=0), locations))
    return pieces


def _rank_and_world(rank: int | None, world_size: int | None) -> tuple[int, int]:
    if (rank is None) != (world_size is None):
        raise InvalidArgumentError("rank, world_size: give both or neither")
    if rank is not None and world_size is not None:
        return rank, world_size
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    values = {}
    for name in ("RANK", "WORLD_SIZE"):
        raw = os.environ.get(name)
        if raw is None:
            continue
        try:
            values[name] = int(raw)
        except ValueError:
            raise InvalidArgumentError(f"{name}: expected an integer, got {raw!r}") from None
    if len(values) == 1:
        raise InvalidArgumentError("RANK, WORLD_SIZE: the environment sets one but not the other")
    return values.get("RANK", 0), values.get("WORLD_SIZE", 1)
