"""Cutting a stream of record batches at fixed row boundaries, without copies where aligned."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import pyarrow as pa

__all__ = ["cut_batches", "skip_rows", "slice_batches"]


def cut_batches(
    batches: Iterable[pa.RecordBatch], position: int, phase: int, batch_rows: int
) -> Iterator[pa.RecordBatch]:
    """Re-cut ``batches`` (rows from global ``position`` on) so that each output batch ends at a
    position ``phase + k * batch_rows`` or at the end of the stream.

    An input batch that already spans exactly one output batch is passed on as a zero-copy slice;
    only an output batch assembled from several inputs is copied (``concat_batches``).
    """
    pending: list[pa.RecordBatch] = []
    pending_rows = 0
    for batch in batches:
        offset = 0
        while offset < batch.num_rows:
            room = batch_rows - (position + pending_rows - phase) % batch_rows
            take = min(room, batch.num_rows - offset)
            pending.append(batch.slice(offset, take))
            pending_rows += take
            offset += take
            if take == room:
                yield _joined(pending)
                position += pending_rows
                pending, pending_rows = [], 0
    if pending:
        yield _joined(pending)


def slice_batches(
    batch: pa.RecordBatch, start: int, stop: int, phase: int, batch_rows: int
) -> Iterator[pa.RecordBatch]:
    """Rows ``start..stop`` of ``batch`` as zero-copy slices, each ending at a position
    ``phase + k * batch_rows`` (positions counted from the batch's first row) or at ``stop``."""
    position = start
    while position < stop:
        end = min(stop, position + batch_rows - (position - phase) % batch_rows)
        yield batch.slice(position, end - position)
        position = end


def skip_rows(batches: Iterable[pa.RecordBatch], skip: int, limit: int) -> Iterator[pa.RecordBatch]:
    """Rows ``skip`` to ``skip + limit`` of ``batches``, as zero-copy slices."""
    for batch in batches:
        if limit <= 0:
            return
        if skip >= batch.num_rows:
            skip -= batch.num_rows
            continue
        piece = batch.slice(skip, min(limit, batch.num_rows - skip))
        skip = 0
        limit -= piece.num_rows
        if piece.num_rows:
            yield piece


def _joined(pieces: list[pa.RecordBatch]) -> pa.RecordBatch:
    return pieces[0] if len(pieces) == 1 else pa.concat_batches(pieces)
