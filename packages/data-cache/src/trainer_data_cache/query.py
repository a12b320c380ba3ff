"""DataFusion projection and filtering over Arrow data, streamed batch by batch.

Every query runs in a session of its own whose memory pool holds ``memory`` bytes (greedy, no
spilling to disk): an operator that wants more fails the query with
``MemoryBudgetExceededError``; it never grows the process past what its caller set aside.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any, Final

import datafusion
import pyarrow as pa

from trainer_data_cache.errors import MemoryBudgetExceededError, UnknownColumnError
from trainer_data_cache.filters import Filter, apply_filter

__all__ = [
    "DEFAULT_QUERY_MEMORY",
    "check_columns",
    "check_read",
    "count_rows",
    "plan",
    "stream_batches",
]

DEFAULT_QUERY_MEMORY: Final = 16 << 20
"""Bytes of DataFusion memory pool a query gets unless its caller says otherwise (16 MiB)."""


def check_columns(schema: pa.Schema, columns: Sequence[str] | None) -> pa.Schema:
    """The schema projected to ``columns`` (all when None); raises UnknownColumnError."""
    if columns is None:
        return schema
    missing = [name for name in columns if name not in schema.names]
    if missing:
        raise UnknownColumnError(
            f"columns: unknown column(s) {missing}; the data has {schema.names}"
        )
    if len(set(columns)) != len(columns):
        raise UnknownColumnError(f"columns: {list(columns)} names a column twice")
    return pa.schema([schema.field(name) for name in columns], metadata=schema.metadata)


def check_read(schema: pa.Schema, columns: Sequence[str] | None, row_filter: Filter) -> pa.Schema:
    """The projected schema of a read, its columns and filter checked against ``schema``. Only
    a filter is planned by DataFusion (a session costs milliseconds; a plain read needs none)."""
    projected = check_columns(schema, columns)
    if row_filter is not None:
        plan(schema.empty_table(), columns, row_filter)
    return projected


def plan(
    data: Any,
    columns: Sequence[str] | None,
    row_filter: Filter,
    batch_rows: int = 65536,
    memory: int = DEFAULT_QUERY_MEMORY,
) -> datafusion.DataFrame:
    """A single-partition DataFusion frame over ``data`` (a table or a stream), filtered then
    projected, in a session with a ``memory``-byte pool. One partition keeps the rows in their
    stored order, which the row ranges rely on."""
    config = datafusion.SessionConfig().with_target_partitions(1).with_batch_size(batch_rows)
    runtime = datafusion.RuntimeEnvBuilder().with_disk_manager_disabled()
    session = datafusion.SessionContext(config, runtime.with_greedy_memory_pool(memory))
    frame = session.from_arrow(data)
    check_columns(frame.schema(), columns)
    frame = apply_filter(frame, row_filter)
    if columns is not None:
        frame = frame.select(*[datafusion.col(name) for name in columns])
    return frame


def stream_batches(frame: datafusion.DataFrame) -> Iterator[pa.RecordBatch]:
    """The frame's rows as Arrow batches, produced one at a time (``execute_stream``)."""
    with _pool_limited():
        for batch in frame.execute_stream():
            yield batch.to_pyarrow()


def count_rows(table: pa.Table, row_filter: Filter, memory: int = DEFAULT_QUERY_MEMORY) -> int:
    """How many rows of ``table`` the filter keeps."""
    if row_filter is None:
        return int(table.num_rows)
    with _pool_limited():
        return int(plan(table, [], row_filter, memory=memory).count())


@contextlib.contextmanager
def _pool_limited() -> Iterator[None]:
    """Answer a query that outgrew its memory pool as MemoryBudgetExceededError."""
    try:
        yield
    except Exception as error:  # DataFusion raises plain Exception
        if "Resources exhausted" not in str(error):
            raise
        first = (str(error).splitlines() or [""])[0].replace("DataFusion error: ", "")
        raise MemoryBudgetExceededError(f"query: outgrew its memory pool: {first}") from None
