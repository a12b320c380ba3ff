"""embedding lookup and its gradient (repeated indices, padding_idx)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from gems_kernels import accuracy


@pytest.mark.parametrize(
    ("indices_shape", "dtype"), accuracy.dtype_variants([((),), ((5,),), ((3, 4),)])
)
@pytest.mark.parametrize("padding_idx", [None, 2], ids=["no-padding", "padding"])
def test_lookup_and_gradient(
    indices_shape: tuple[int, ...], padding_idx: int | None, dtype: torch.dtype
) -> None:
    weight = accuracy.make_tensor((6, 9), dtype)
    indices = accuracy.make_tensor(indices_shape, torch.int64, low=0, high=5)
    grad = accuracy.make_tensor((*indices_shape, 9), dtype)
    accuracy.check_op(
        accuracy.with_gradients(lambda w, i: F.embedding(i, w, padding_idx=padding_idx)),
        weight,
        indices,
        grad,
        overloads=["embedding", "embedding_dense_backward"],
        reduce_size=max(indices.numel(), 1),
    )


def test_out_of_range_index_names_the_argument() -> None:
    from gems_kernels import ops

    with pytest.raises(IndexError, match=r"indices: expected values in \[0, 4\)"):
        ops.embedding(torch.ones(4, 2), torch.tensor([4]))
