"""The documents that travel in Flight descriptors and tickets, versioned JSON.

``ReadRequest`` is the descriptor command of ``get_flight_info`` / ``get_schema``;
``Ticket`` is what ``do_get`` serves; ``PutRequest`` is the descriptor command with which the head
pushes a partition into a node. Every document carries ``"v"``; a reader refuses versions it does
not know, so head, nodes and clients of different releases fail loudly instead of misreading.
Row positions are global positions in the dataset's (filtered) row order.
"""

from __future__ import annotations

import json
import reprlib
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any, Final, TypeVar

from trainer_data_cache.errors import InvalidArgumentError
from trainer_data_cache.filters import Filter, check_filter_shape

__all__ = [
    "MAX_INT",
    "VERSION",
    "PutRequest",
    "ReadRequest",
    "Ticket",
    "action_body",
    "check_int",
    "check_name",
]

VERSION: Final = 1
"""The version of every document this module writes."""
MAX_INT: Final = 2**63 - 1
"""The largest count or position a document may carry (Arrow's row positions are int64)."""

_T = TypeVar("_T", bound="_Document")


class _Document:
    """JSON encoding shared by the documents below."""

    def to_bytes(self) -> bytes:
        return json.dumps({"v": VERSION, **asdict(self)}, sort_keys=True).encode()  # type: ignore[call-overload]

    @classmethod
    def from_bytes(cls: type[_T], data: bytes) -> _T:
        name = cls.__name__
        try:
            document = json.loads(data)
        except ValueError as error:
            raise InvalidArgumentError(f"{name}: not a JSON document: {error}") from error
        if not isinstance(document, dict):
            raise InvalidArgumentError(f"{name}: expected a JSON object")
        version = document.pop("v", None)
        if version != VERSION:
            raise InvalidArgumentError(f"{name}.v: expected version {VERSION}, got {version!r}")
        try:
            return cls(**document)
        except TypeError as error:
            raise InvalidArgumentError(f"{name}: {error}") from error


def check_int(name: str, value: object, minimum: int) -> None:
    """Raise InvalidArgumentError unless ``value`` is an integer from ``minimum`` to MAX_INT."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidArgumentError(f"{name}: expected an integer >= {minimum}, got {value!r}")
    if value > MAX_INT:
        raise InvalidArgumentError(
            f"{name}: expected an integer <= {MAX_INT} (int64), got a {value.bit_length()}-bit one"
        )


def _check_columns(name: str, columns: object) -> None:
    if columns is None:
        return
    if (
        not isinstance(columns, Sequence)
        or isinstance(columns, str)
        or not all(isinstance(column, str) for column in columns)
    ):
        raise InvalidArgumentError(f"{name}: expected a list of column names, got {columns!r}")


def check_name(name: str, value: object) -> None:
    """Raise InvalidArgumentError unless ``value`` is a non-empty dataset name."""
    if not isinstance(value, str) or not value:
        raise InvalidArgumentError(
            f"{name}: expected a non-empty dataset name, got {reprlib.repr(value)}"
        )


@dataclass(frozen=True)
class ReadRequest(_Document):
    """Which rows a client wants: shard ``shard`` of ``num_shards`` contiguous shards."""

    dataset: str
    shard: int = 0
    num_shards: int = 1
    columns: list[str] | None = None
    filter: Filter = None
    batch_rows: int = 65536

    def __post_init__(self) -> None:
        check_name("dataset", self.dataset)
        check_int("num_shards", self.num_shards, 1)
        check_int("shard", self.shard, 0)
        if self.shard >= self.num_shards:
            raise InvalidArgumentError(
                f"shard: expected 0 <= shard < num_shards={self.num_shards}, got {self.shard}"
            )
        _check_columns("columns", self.columns)
        check_int("batch_rows", self.batch_rows, 1)
        check_filter_shape(self.filter)


@dataclass(frozen=True)
class Ticket(_Document):
    """Rows ``start`` to ``stop`` of one partition, cut into batches at ``phase + k*batch_rows``.

    ``base`` is the global position of the partition's first (filtered) row, so the node reads
    its local rows ``start - base`` to ``stop - base``.
    """

    dataset: str
    generation: int
    partition: int
    base: int
    start: int
    stop: int
    phase: int
    batch_rows: int
    columns: list[str] | None = None
    filter: Filter = None

    def __post_init__(self) -> None:
        check_name("dataset", self.dataset)
        for name in ("generation", "partition", "base", "phase"):
            check_int(name, getattr(self, name), 0)
        check_int("start", self.start, self.base)
        check_int("stop", self.stop, self.start)
        check_int("batch_rows", self.batch_rows, 1)
        _check_columns("columns", self.columns)
        check_filter_shape(self.filter)

    def resumed(self, start: int) -> Ticket:
        """The same ticket from row ``start`` on, with the same batch boundaries."""
        return replace(self, start=start)


@dataclass(frozen=True)
class PutRequest(_Document):
    """A partition the head pushes into a node: dataset, generation, index and its size; with
    ``rows``, the node refuses a stream that ends with another row count (a cut-off copy)."""

    dataset: str
    generation: int
    partition: int
    nbytes: int
    rows: int | None = None

    def __post_init__(self) -> None:
        check_name("dataset", self.dataset)
        for name in ("generation", "partition", "nbytes"):
            check_int(name, getattr(self, name), 0)
        if self.rows is not None:
            check_int("rows", self.rows, 0)


def action_body(body: bytes, required: Sequence[str] = ()) -> Mapping[str, Any]:
    """The JSON object of an action body, checked for its required keys."""
    try:
        document = json.loads(body or b"{}")
    except ValueError as error:
        raise InvalidArgumentError(f"action body: not a JSON document: {error}") from error
    if not isinstance(document, dict):
        raise InvalidArgumentError("action body: expected a JSON object")
    missing = [key for key in required if key not in document]
    if missing:
        raise InvalidArgumentError(f"action body: missing key(s) {missing}")
    return document
