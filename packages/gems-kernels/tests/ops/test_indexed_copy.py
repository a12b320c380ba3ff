"""Offset tables and stride collapsing behind the indexed-copy kernels."""

from __future__ import annotations

import pytest
import torch
from gems_kernels.ops import indexed_copy


@pytest.mark.parametrize(
    ("sizes", "strides", "expected"),
    [
        pytest.param((3, 4), (4, 1), 1, id="contiguous"),
        pytest.param((3, 4), (5, 1), None, id="narrowed"),
        pytest.param((3, 1, 4), (4, 99, 1), 1, id="size-1-dim-ignored"),
        pytest.param((4,), (2,), 2, id="strided-1d"),
        pytest.param((2, 3), (0, 0), 0, id="expanded"),
        pytest.param((3, 5), (1, 3), None, id="transposed"),
        pytest.param((), (), 1, id="no-dims"),
    ],
)
def test_collapsed_stride(
    sizes: tuple[int, ...], strides: tuple[int, ...], expected: int | None
) -> None:
    assert indexed_copy.collapsed_stride(sizes, strides) == expected


def test_offsets_follow_the_strides() -> None:
    t = torch.arange(24).reshape(2, 3, 4).transpose(1, 2)[:, 1:]
    table = indexed_copy.offsets(tuple(t.shape), tuple(t.stride()), t.device)
    assert torch.equal(t.flatten(), t.storage_offset() + table)


@pytest.mark.parametrize("positions", [8, 1 << 16], ids=["cached", "built-per-call"])
def test_offsets_cache_only_small_tables(positions: int) -> None:
    first = indexed_copy.offsets((positions,), (3,), torch.device("cpu"))
    second = indexed_copy.offsets((positions,), (3,), torch.device("cpu"))
    assert torch.equal(first, torch.arange(positions) * 3)
    assert (first is second) == (positions == 8)
