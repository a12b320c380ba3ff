"""DataFusion projection and filtering over Arrow data, streamed batch by batch."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import datafusion
import pyarrow as pa

from trainer_data_cache.errors import UnknownColumnError
from trainer_data_cache.filters import Filter, apply_filter

__all__ = ["check_columns", "count_rows", "plan", "stream_batches"]


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


def plan(
    data: Any, columns: Sequence[str] | None, row_filter: Filter, batch_rows: int = 65536
) -> datafusion.DataFrame:
    """A single-partition DataFusion frame over ``data`` (a table or a stream), filtered then
    projected. One partition keeps the rows in their stored order, which the row ranges rely on."""
    config = datafusion.SessionConfig().with_target_partitions(1).with_batch_size(batch_rows)
    frame = datafusion.SessionContext(config).from_arrow(data)
    check_columns(frame.schema(), columns)
    frame = apply_filter(frame, row_filter)
    if columns is not None:
        frame = frame.select(*[datafusion.col(name) for name in columns])
    return frame


def stream_batches(frame: datafusion.DataFrame) -> Iterator[pa.RecordBatch]:
    """The frame's rows as Arrow batches, produced one at a time (``execute_stream``)."""
    for batch in frame.execute_stream():
        yield batch.to_pyarrow()


def count_rows(table: pa.Table, row_filter: Filter) -> int:
    """How many rows of ``table`` the filter keeps."""
    if row_filter is None:
        return int(table.num_rows)
    return int(plan(table, [], row_filter).count())
