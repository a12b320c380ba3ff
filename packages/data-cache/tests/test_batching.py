"""Re-cutting batch streams at fixed boundaries, and skipping rows."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from trainer_data_cache.batching import cut_batches, skip_rows, slice_batches


def stream(start: int, sizes: list[int]) -> list[pa.RecordBatch]:
    batches = []
    for size in sizes:
        batches.append(pa.record_batch({"x": list(range(start, start + size))}))
        start += size
    return batches


@pytest.mark.parametrize(
    ("position", "phase", "sizes", "expected"),
    [
        pytest.param(0, 0, [4, 4, 2], [4, 4, 2], id="aligned-passes-through"),
        pytest.param(0, 0, [3, 3, 3, 1], [4, 4, 2], id="joined-across-inputs"),
        pytest.param(2, 0, [10], [2, 4, 4], id="first-cut-reaches-a-boundary"),
        pytest.param(5, 5, [0, 9, 0], [4, 4, 1], id="phase-and-empty-inputs"),
        pytest.param(0, 0, [], [], id="nothing"),
    ],
)
def test_cut_batches_end_on_boundaries(
    position: int, phase: int, sizes: list[int], expected: list[int]
) -> None:
    out = list(cut_batches(stream(position, sizes), position, phase, 4))
    assert [batch.num_rows for batch in out] == expected
    assert [v for batch in out for v in batch.column(0).to_pylist()] == list(
        range(position, position + sum(sizes))
    )


def test_aligned_inputs_are_not_copied() -> None:
    batch = stream(0, [8])[0]
    out = list(cut_batches([batch], 0, 0, 4))
    assert out[1].column(0).buffers()[1].address == batch.column(0).buffers()[1].address


@pytest.mark.parametrize(
    ("skip", "limit", "expected"),
    [(0, 10, list(range(10))), (3, 4, [3, 4, 5, 6]), (9, 5, [9]), (12, 1, [])],
)
def test_skip_rows(skip: int, limit: int, expected: list[int]) -> None:
    out = skip_rows(stream(0, [3, 3, 4]), skip, limit)
    assert [v for batch in out for v in batch.column(0).to_pylist()] == expected


@pytest.mark.parametrize(
    ("start", "stop", "phase", "batch_rows"),
    [(0, 10, 0, 4), (3, 10, 0, 4), (3, 10, 3, 4), (5, 5, 0, 4), (1, 9, 7, 3), (0, 10, 0, 100)],
)
def test_slices_of_one_batch_end_where_cutting_would_end_them(
    start: int, stop: int, phase: int, batch_rows: int
) -> None:
    whole = pa.record_batch({"x": np.arange(10)})
    sliced = list(slice_batches(whole, start, stop, phase, batch_rows))
    cut = list(cut_batches([whole.slice(start, stop - start)], start, phase, batch_rows))
    assert [b.column(0).to_pylist() for b in sliced] == [b.column(0).to_pylist() for b in cut]
    buffer = whole.column(0).buffers()[1].address
    assert all(b.column(0).buffers()[1].address == buffer for b in sliced)  # views, no copies
