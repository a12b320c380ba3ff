"""Arrow columns to tensors: shared memory, shapes, dtypes, nulls, refused types."""

from __future__ import annotations

import datetime

import numpy as np
import pyarrow as pa
import pytest
import torch
from trainer_data_cache import InvalidArgumentError, NullValueError
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
