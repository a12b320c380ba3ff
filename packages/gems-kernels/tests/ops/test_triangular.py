"""triu and tril for several diagonals and batch shapes."""

from __future__ import annotations

import pytest
import torch
from gems_kernels import accuracy


@pytest.mark.parametrize(
    ("shape", "diagonal", "dtype"),
    accuracy.dtype_variants([((4, 4), 0), ((3, 7), 1), ((2, 5, 3), -1), ((1, 1), 0)]),
)
@pytest.mark.parametrize("name", ["triu", "tril"])
def test_triangle(name: str, shape: tuple[int, ...], diagonal: int, dtype: torch.dtype) -> None:
    x = accuracy.make_tensor(shape, dtype)
    accuracy.check_op(lambda t: getattr(torch, name)(t, diagonal), x, overloads=[name])


def test_one_dimension_is_an_error() -> None:
    from gems_kernels import ops

    with pytest.raises(RuntimeError, match="triu: input tensor must have at least 2"):
        ops.triu(torch.ones(3))
