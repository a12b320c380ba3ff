"""index_select, gather, scatter and index_add: exact results for every dtype."""

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


@pytest.mark.parametrize(
    ("shape", "dim", "dtype"),
    accuracy.dtype_variants([((6,), 0), ((4, 6), 1), ((4, 6), 0)], DTYPES),
)
def test_gather_and_scatter(shape: tuple[int, ...], dim: int, dtype: torch.dtype) -> None:
    x = accuracy.make_tensor(shape, dtype)
    index_shape = list(shape)
    index_shape[dim] = 3
    # A permutation prefix per row: distinct positions keep scatter deterministic.
    index = torch.argsort(torch.rand(*shape), dim=dim).narrow(dim, 0, 3)
    src = accuracy.make_tensor(index_shape, dtype)
    accuracy.check_op(lambda t, i: torch.gather(t, dim, i), x, index, overloads=["gather"])
    accuracy.check_op(
        lambda t, i, s: torch.scatter(t, dim, i, s), x, index, src, overloads=["scatter.src"]
    )
    accuracy.check_op(
        lambda t, i: torch.scatter(t, dim, i, 5), x, index, overloads=["scatter.value"]
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


@pytest.mark.parametrize("accumulate", [False, True], ids=["assign", "accumulate"])
def test_index_put_rows(accumulate: bool) -> None:
    x = accuracy.make_tensor((6, 4), torch.float32)
    index = torch.tensor([4, 1, 4]) if accumulate else torch.tensor([4, 1, 3])
    values = accuracy.make_tensor((3, 4), torch.float32)
    accuracy.check_op(
        lambda t, i, v: t.index_put_((i,), v, accumulate=accumulate), x, index, values,
        overloads=["_index_put_impl_"], reduce_size=2,
    )  # fmt: skip


def test_index_put_broadcast_value_through_setitem() -> None:
    x = accuracy.make_tensor((5, 3), torch.bfloat16)

    def assign(t: torch.Tensor, i: torch.Tensor) -> torch.Tensor:
        t[i] = torch.tensor(2.0, dtype=t.dtype)
        return t

    accuracy.check_op(assign, x, torch.tensor([0, 3]), overloads=["_index_put_impl_"])
