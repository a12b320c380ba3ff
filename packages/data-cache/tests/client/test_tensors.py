"""Arrow columns to tensors: shared memory, shapes, dtypes, nulls, refused types."""

from __future__ import annotations

import datetime
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.flight as flight
import pytest
import torch
from trainer_data_cache import ConnectOptions, InvalidArgumentError, NullValueError
from trainer_data_cache.client.tensors import check_tensor_schema, to_tensors


def test_primitive_columns_share_the_arrow_buffer_even_when_sliced() -> None:
    column = pa.array(np.arange(10, dtype=np.int32))
    tensor = to_tensors(pa.record_batch({"x": column}).slice(3, 4))["x"]
    assert tensor.tolist() == [3, 4, 5, 6]
    assert tensor.data_ptr() == column.buffers()[1].address + 3 * 4


@pytest.mark.parametrize(
    ("array", "dtype", "shape"),
    [
        pytest.param(pa.array(np.arange(6, dtype=np.float16)), torch.float16, (6,), id="float16"),
        pytest.param(pa.array([True, False] * 3), torch.bool, (6,), id="bool"),
        pytest.param(
            pa.FixedSizeListArray.from_arrays(pa.array(np.arange(12.0)), 2),
            torch.float64,
            (6, 2),
            id="vector",
        ),
        pytest.param(
            pa.FixedSizeListArray.from_arrays(
                pa.FixedSizeListArray.from_arrays(pa.array(np.arange(24, dtype=np.uint8)), 2), 2
            ),
            torch.uint8,
            (6, 2, 2),
            id="matrix",
        ),
        pytest.param(
            pa.array([datetime.datetime(2024, 1, 1)] * 6),
            torch.int64,
            (6,),
            id="timestamp-as-int64",
        ),
    ],
)
def test_dtypes_and_shapes(array: pa.Array, dtype: torch.dtype, shape: tuple[int, ...]) -> None:
    tensor = to_tensors(pa.record_batch({"c": array}))["c"]
    assert tensor.dtype == dtype and tuple(tensor.shape) == shape


def test_a_sliced_vector_column_keeps_its_rows() -> None:
    vectors = pa.FixedSizeListArray.from_arrays(pa.array(np.arange(20.0)), 4)
    tensor = to_tensors(pa.record_batch({"v": vectors}).slice(2, 2))["v"]
    assert tensor.tolist() == [[8.0, 9.0, 10.0, 11.0], [12.0, 13.0, 14.0, 15.0]]


def test_nulls_raise_and_fill_values_replace_them() -> None:
    batch = pa.record_batch(
        {
            "x": pa.array([1, None, 3]),
            "v": pa.FixedSizeListArray.from_arrays(pa.array([1.0, None, 3.0, 4.0, 5.0, 6.0]), 2),
        }
    )
    with pytest.raises(NullValueError, match="column 'x': 1 null"):
        to_tensors(batch, {"v": 0.0})
    with pytest.raises(NullValueError, match="column 'v'"):
        to_tensors(batch, {"x": 0})
    filled = to_tensors(batch, {"x": 0, "v": -1.0})
    assert filled["x"].tolist() == [1, 0, 3]
    assert filled["v"].tolist() == [[1.0, -1.0], [3.0, 4.0], [5.0, 6.0]]


def test_columns_that_cannot_be_tensors_are_all_named() -> None:
    schema = pa.schema([("s", pa.string()), ("ok", pa.int8()), ("l", pa.list_(pa.int8()))])
    with pytest.raises(InvalidArgumentError, match=r"s \(string\), l \(list<item: int8>\)"):
        check_tensor_schema(schema)


class _TableServer(flight.FlightServerBase):  # type: ignore[misc]
    """Serves one table, cut in batches, to any ticket."""

    def __init__(self, table: pa.Table) -> None:
        super().__init__("grpc://127.0.0.1:0")
        self.table = table

    def do_get(self, context: object, ticket: flight.Ticket) -> flight.RecordBatchStream:
        return flight.RecordBatchStream(self.table.to_reader(max_chunksize=250_000))


def test_received_batches_become_tensors_without_a_copy_or_a_warning() -> None:
    table = pa.table({"x": np.arange(1_000_000), "v": np.arange(1_000_000, dtype=np.float32)})
    with _TableServer(table) as server:
        client = flight.FlightClient(f"grpc://127.0.0.1:{server.port}")
        before = pa.total_allocated_bytes()
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # torch.from_numpy warns on read-only buffers
            reader = client.do_get(flight.Ticket(b""), ConnectOptions().call_options())
            batches = [chunk.data for chunk in reader]
            tensors = [to_tensors(batch) for batch in batches]
        # Realigning received buffers (the old read options) copied every byte into Arrow's pool.
        assert pa.total_allocated_bytes() - before == 0
        for batch, tensor in zip(batches, tensors, strict=True):
            assert tensor["x"].data_ptr() == batch.column("x").buffers()[1].address
        joined = torch.cat([t["v"] for t in tensors]).double()
        assert torch.equal(joined, torch.arange(1_000_000, dtype=torch.float64))
        client.close()


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32, np.float16])
def test_tensors_over_unaligned_buffers_compute_like_aligned_ones(dtype: type) -> None:
    values = (np.random.default_rng(0).random(10_007) * 100).astype(dtype)
    memory = np.zeros(values.nbytes + 8, dtype=np.uint8)
    memory[3 : 3 + values.nbytes] = values.view(np.uint8)  # 3 bytes off any alignment
    buffer = pa.py_buffer(memory[3 : 3 + values.nbytes])
    column = pa.Array.from_buffers(pa.from_numpy_dtype(dtype), len(values), [None, buffer])
    tensor = to_tensors(pa.record_batch({"c": column}))["c"]
    assert tensor.data_ptr() % 2 == 1 and tensor.data_ptr() == buffer.address
    reference = values.astype(np.float64)
    assert np.allclose(tensor.double().numpy(), reference)
    assert tensor.double().sum().item() == pytest.approx(reference.sum(), rel=1e-9)
    matrix = tensor[:10_000].double().reshape(100, 100)
    expected = reference[:10_000].reshape(100, 100)
    assert np.allclose((matrix @ matrix.T).numpy(), expected @ expected.T, rtol=1e-9)
    assert torch.equal(tensor * 2, torch.from_numpy(values.copy()) * 2)
