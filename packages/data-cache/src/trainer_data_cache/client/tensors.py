"""Arrow columns to torch tensors: without copies where the memory layout allows it.

A fixed-width column without nulls crosses by DLPack (``torch.from_dlpack``): the tensor is a
view of the Arrow buffer (which belongs to its batch alone) and keeps it alive, with no copy
and none of the warnings ``torch.from_numpy`` gives for the read-only NumPy view of a received
buffer. Buffers received over Flight are used where gRPC put them, which need not be aligned
to the element size; CPU kernels and ``pin_memory`` read them as they are (see the README).

What a column needs (its list sizes, a temporal view, the boolean copy) is worked out once per
schema (``_plan``), so a batch costs one null check, one slice per list level and one DLPack
hand-over per column; only a column with nulls takes the general path.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import torch
from torch.utils.dlpack import from_dlpack

from trainer_data_cache.errors import InvalidArgumentError, NullValueError

__all__ = ["check_tensor_schema", "to_tensors"]


def check_tensor_schema(schema: pa.Schema) -> None:
    """Raise InvalidArgumentError naming every column that cannot become a tensor."""
    bad = [f"{field.name} ({field.type})" for field in schema if not _is_tensor_type(field.type)]
    if bad:
        raise InvalidArgumentError(
            f"columns: {', '.join(bad)} cannot become tensors; select numeric, boolean, temporal "
            "or fixed-size-list columns with columns=[...]"
        )


def to_tensors(
    batch: pa.RecordBatch, fill_values: Mapping[str, object] | None = None
) -> dict[str, torch.Tensor]:
    """One tensor per column. Numeric columns without nulls share the Arrow buffers (DLPack);
    fixed-size lists become 2-D (or deeper) tensors; booleans are unpacked (a copy). A column
    with nulls raises NullValueError unless ``fill_values`` gives it a value."""
    fills = fill_values or {}
    return {
        column.name: column.tensor(array, fills)
        for column, array in zip(_plan(batch.schema), batch.columns, strict=True)
    }


@dataclass(frozen=True)
class _Column:
    """How one column of a schema becomes a tensor."""

    name: str
    sizes: tuple[int, ...]
    """The list size of each fixed-size-list level, outermost first."""
    view: pa.DataType | None
    """The integer type a temporal column is read as."""
    boolean: bool

    def tensor(self, array: pa.Array, fills: Mapping[str, object]) -> torch.Tensor:
        """The column's tensor: a view of its buffer unless it holds nulls or booleans."""
        values = array
        for size in self.sizes:
            if values.null_count:
                return _tensor(self.name, array, fills)
            values = values.values.slice(values.offset * size, len(values) * size)
        if values.null_count or self.boolean:
            return _tensor(self.name, array, fills)
        tensor = from_dlpack(values if self.view is None else values.view(self.view))
        return tensor.view(len(array), *self.sizes) if self.sizes else tensor


@functools.lru_cache(maxsize=64)
def _plan(schema: pa.Schema) -> tuple[_Column, ...]:
    columns = []
    for field in schema:
        data_type, sizes = field.type, []
        while pa.types.is_fixed_size_list(data_type):
            sizes.append(data_type.list_size)
            data_type = data_type.value_type
        view = None
        if pa.types.is_temporal(data_type):
            view = pa.int64() if data_type.bit_width == 64 else pa.int32()
        columns.append(_Column(field.name, tuple(sizes), view, pa.types.is_boolean(data_type)))
    return tuple(columns)


def _tensor(name: str, column: pa.Array, fills: Mapping[str, object]) -> torch.Tensor:
    """The general path: nulls filled (or refused), booleans unpacked."""
    if _has_nulls(column):
        if name not in fills:
            raise NullValueError(
                f"column {name!r}: {column.null_count or 'some'} null value(s) in a batch; pass "
                f"fill_values={{{name!r}: ...}} to replace them"
            )
        column = _filled(column, fills[name])
    shape = [len(column)]
    while pa.types.is_fixed_size_list(column.type):
        shape.append(column.type.list_size)
        column = column.flatten()
    if pa.types.is_temporal(column.type):
        column = column.view(pa.int64() if column.type.bit_width == 64 else pa.int32())
    if pa.types.is_boolean(column.type):  # bit-packed in Arrow: unpacked into a new array
        tensor = torch.from_numpy(column.to_numpy(zero_copy_only=False))
    else:
        tensor = from_dlpack(column)
    return tensor.reshape(shape) if len(shape) > 1 else tensor


def _has_nulls(column: pa.Array) -> bool:
    while True:
        if column.null_count:
            return True
        if not pa.types.is_fixed_size_list(column.type):
            return False
        column = column.flatten()


def _filled(column: pa.Array, value: object) -> pa.Array:
    if not pa.types.is_fixed_size_list(column.type):
        return pc.fill_null(column, pa.scalar(value, type=column.type))
    if column.null_count:
        raise NullValueError("a null fixed-size-list row cannot be filled; only its items can")
    return pa.FixedSizeListArray.from_arrays(
        _filled(column.flatten(), value), column.type.list_size
    )


def _is_tensor_type(data_type: pa.DataType) -> bool:
    while pa.types.is_fixed_size_list(data_type):
        data_type = data_type.value_type
    return (
        pa.types.is_integer(data_type)
        or pa.types.is_floating(data_type)
        or pa.types.is_boolean(data_type)
        or (pa.types.is_temporal(data_type) and not pa.types.is_interval(data_type))
    )
