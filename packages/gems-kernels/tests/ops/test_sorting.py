"""sort (stable) and topk: exact values and indices, ties resolved by lowest index."""

from __future__ import annotations

import pytest
import torch
from gems_kernels import accuracy

CASES = [((7,), 0), ((4, 9), 1), ((4, 9), 0), ((2, 3, 33), -1), ((1,), 0)]


def with_ties(shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    values = accuracy.make_tensor(shape, torch.int64, low=-4, high=4).to(dtype)
    return values * 0.5


@pytest.mark.parametrize(("shape", "dim", "dtype"), accuracy.dtype_variants(CASES))
@pytest.mark.parametrize("descending", [False, True], ids=["ascending", "descending"])
def test_sort(shape: tuple[int, ...], dim: int, descending: bool, dtype: torch.dtype) -> None:
    x = with_ties(shape, dtype)
    accuracy.check_op(
        lambda t: tuple(torch.sort(t, dim=dim, descending=descending, stable=True)),
        x,
        overloads=["sort.stable"],
    )


def test_sort_default_overload_and_negative_values() -> None:
    x = accuracy.non_contiguous(accuracy.make_tensor((3, 10), torch.float32))
    x[0, 3] = float("nan")
    accuracy.check_op(lambda t: tuple(torch.ops.aten.sort(t, 1)), x, overloads=["sort"])


@pytest.mark.parametrize(("k", "largest"), [(1, True), (3, False), (9, True)])
def test_topk(k: int, largest: bool) -> None:
    x = accuracy.make_tensor((5, 9), torch.float32)
    accuracy.check_op(lambda t: tuple(torch.topk(t, k, largest=largest)), x, overloads=["topk"])


def test_topk_rejects_k_beyond_the_dim() -> None:
    from gems_kernels import ops

    with pytest.raises(RuntimeError, match="k: selected index k=4 out of range"):
        ops.topk(torch.ones(3), 4)
