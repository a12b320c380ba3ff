"""sum, mean, prod, amax, amin, max, min, all, any over the reduction shape table."""

from __future__ import annotations

import math

import pytest
import torch
from gems_kernels import accuracy

CASES = accuracy.reduction_cases()
IDS = [f"{shape}-{dims}" for shape, dims in CASES]
VARIANTS = [
    pytest.param(*case, *variant, id=f"{case}-{variant}".replace("torch.", ""))
    for case, variant in accuracy.spread(
        CASES, [(d, layout) for layout in ("contiguous", "strided") for d in accuracy.FLOAT_DTYPES]
    )
]


def reduced_size(shape: tuple[int, ...], dims: list[int] | None) -> int:
    if dims is None:
        return math.prod(shape)
    return math.prod(shape[d] for d in dims)


@pytest.mark.parametrize(("shape", "dims", "dtype", "layout"), VARIANTS)
@pytest.mark.parametrize("name", ["sum", "mean"])
def test_sum_mean(
    name: str, shape: tuple[int, ...], dims: list[int] | None, dtype: torch.dtype, layout: str
) -> None:
    x = accuracy.arrange(accuracy.make_tensor(shape, dtype), layout)
    fn = getattr(torch, name)
    if dims is None:
        accuracy.check_op(fn, x, overloads=[name], reduce_size=reduced_size(shape, dims))
    else:
        overload = "sum.dim_IntList" if name == "sum" else "mean.dim"
        accuracy.check_op(
            lambda t: fn(t, dims, keepdim=True),
            x,
            overloads=[overload],
            reduce_size=reduced_size(shape, dims),
        )


@pytest.mark.parametrize(("shape", "dims", "dtype", "layout"), VARIANTS)
@pytest.mark.parametrize("name", ["amax", "amin"])
def test_amax_amin(
    name: str, shape: tuple[int, ...], dims: list[int] | None, dtype: torch.dtype, layout: str
) -> None:
    x = accuracy.arrange(accuracy.make_tensor(shape, dtype), layout)
    fn = getattr(torch, name)
    accuracy.check_op(lambda t: fn(t, dims or []), x, overloads=[name])


@pytest.mark.parametrize("dtype", [torch.int32, torch.bool, torch.float16], ids=str)
def test_sum_of_integers_and_dtype_argument(dtype: torch.dtype) -> None:
    x = accuracy.make_tensor((5, 6), dtype, low=-4, high=4)
    accuracy.check_op(torch.sum, x, overloads=["sum"])
    accuracy.check_op(
        lambda t: torch.sum(t, 1, dtype=torch.float32),
        x,
        overloads=["sum.dim_IntList"],
        reduce_size=6,
    )


def test_prod() -> None:
    x = accuracy.make_tensor((3, 7), torch.float32, low=0.5, high=1.5)
    accuracy.check_op(torch.prod, x, overloads=["prod"], reduce_size=21)
    accuracy.check_op(lambda t: torch.prod(t, 1), x, overloads=["prod.dim_int"], reduce_size=7)
    ints = accuracy.make_tensor((4, 3), torch.int64, low=-3, high=3)
    accuracy.check_op(lambda t: torch.prod(t, 0), ints, overloads=["prod.dim_int"])


def test_max_min_of_everything_propagate_nan() -> None:
    x = accuracy.make_tensor((4, 5), torch.float32)
    accuracy.check_op(torch.max, x, overloads=["max"])
    accuracy.check_op(torch.min, x, overloads=["min"])
    x[2, 3] = float("nan")
    accuracy.check_op(torch.max, x, overloads=["max"])


@pytest.mark.parametrize(
    ("shape", "dims", "dtype"),
    accuracy.dtype_variants(CASES, [torch.bool, torch.float32, torch.int64]),
)
@pytest.mark.parametrize("name", ["all", "any"])
def test_all_any(
    name: str, shape: tuple[int, ...], dims: list[int] | None, dtype: torch.dtype
) -> None:
    # Mostly-true values, so that both results occur.
    x = (accuracy.make_tensor(shape, torch.float32, low=0, high=1) > 0.15).to(dtype)
    fn = getattr(torch, name)
    if dims is None:
        accuracy.check_op(fn, x, overloads=[name])
    else:
        accuracy.check_op(lambda t: fn(t, dims[0]), x, overloads=[f"{name}.dim"])


def test_mean_of_integers_is_an_error_like_aten() -> None:
    from gems_kernels import use_gems

    with use_gems(include=["mean"]), pytest.raises(RuntimeError, match="mean"):
        torch.mean(torch.arange(4))
