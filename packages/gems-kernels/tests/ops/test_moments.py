"""var_mean, var and std against the float64 reference."""

from __future__ import annotations

import pytest
import torch
from gems_kernels import accuracy

CASES = [c for c in accuracy.reduction_cases() if c[0] != ()]


@pytest.mark.parametrize(("shape", "dims", "dtype"), accuracy.dtype_variants(CASES))
@pytest.mark.parametrize("correction", [1, 0], ids=["bessel", "population"])
def test_var_mean(
    shape: tuple[int, ...], dims: list[int] | None, correction: int, dtype: torch.dtype
) -> None:
    x = accuracy.make_tensor(shape, dtype)
    accuracy.check_op(
        lambda t: tuple(torch.var_mean(t, dims, correction=correction)),
        x,
        overloads=["var_mean.correction"],
    )


def test_var_and_std_keepdim_strided() -> None:
    x = accuracy.non_contiguous(accuracy.make_tensor((6, 10), torch.float32))
    accuracy.check_op(lambda t: torch.var(t, 1, keepdim=True), x, overloads=["var.correction"])
    accuracy.check_op(lambda t: torch.std(t, 0), x, overloads=["std.correction"])
