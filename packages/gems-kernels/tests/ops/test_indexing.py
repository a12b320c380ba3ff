"""index_select and index_add: exact results for every dtype."""

from __future__ import annotations

import pytest
import torch
from gems_kernels import accuracy

DTYPES = [torch.float32, torch.bfloat16, torch.int64]


@pytest.mark.parametrize(
    ("shape", "dim", "dtype"),
    accuracy.dtype_variants([((5,), 0), ((4, 6), 1), ((3, 4, 5), 1)], DTYPES),
)
def test_index_select(shape: tuple[int, ...], dim: int, dtype: torch.dtype) -> None:
    x = accuracy.make_tensor(shape, dtype)
    index = torch.tensor([2, 0, 2, 1])
    accuracy.check_op(
        lambda t, i: torch.index_select(t, dim, i), x, index, overloads=["index_select"]
    )


def test_index_add_accumulates_duplicates() -> None:
    x = accuracy.make_tensor((5, 3), torch.float32)
    source = accuracy.make_tensor((4, 3), torch.float32)
    index = torch.tensor([0, 4, 0, 2])
    accuracy.check_op(
        lambda t, i, s: torch.index_add(t, 0, i, s, alpha=2),
        x,
        index,
        source,
        overloads=["index_add"],
        reduce_size=2,
    )


def test_out_of_range_index_is_an_index_error() -> None:
    from gems_kernels import ops

    with pytest.raises(IndexError, match="index: index out of range"):
        ops.index_select(torch.ones(3), 0, torch.tensor([3]))
