"""Binary arithmetic against ATen: float dtypes, integers exactly, broadcasting, scalars."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from gems_kernels import accuracy

CASES = [
    pytest.param(["add.Tensor"], lambda a, b: torch.add(a, b, alpha=2), id="add"),
    pytest.param(["sub.Tensor"], torch.sub, id="sub"),
    pytest.param(["mul.Tensor"], torch.mul, id="mul"),
    pytest.param(["div.Tensor"], torch.div, id="div"),
    pytest.param(
        ["div.Tensor_mode"], lambda a, b: torch.div(a, b, rounding_mode="trunc"), id="div-trunc"
    ),
    pytest.param(
        ["div.Tensor_mode"], lambda a, b: torch.div(a, b, rounding_mode="floor"), id="div-floor"
    ),
    pytest.param(["remainder.Tensor"], torch.remainder, id="remainder"),
    pytest.param(["pow.Tensor_Tensor"], torch.pow, id="pow"),
    pytest.param(["maximum"], torch.maximum, id="maximum"),
    pytest.param(["minimum"], torch.minimum, id="minimum"),
    pytest.param(["add_.Tensor"], lambda a, b: a.add_(b), id="add_"),
    pytest.param(["mul_.Tensor"], lambda a, b: a.mul_(b), id="mul_"),
]


@pytest.mark.parametrize(("shape", "dtype", "layout"), accuracy.pointwise_variants())
@pytest.mark.parametrize(("overloads", "fn"), CASES)
def test_binary_float(
    overloads: list[str],
    fn: Callable[..., torch.Tensor],
    shape: tuple[int, ...],
    dtype: torch.dtype,
    layout: str,
) -> None:
    # pow gets positive bases: negative ones with fractional exponents are NaN.
    low = 0.5 if overloads == ["pow.Tensor_Tensor"] else -3.0
    a = accuracy.arrange(accuracy.make_tensor(shape, dtype, low=low), layout)
    # Divisors away from zero keep quotients (and their floors) well conditioned.
    b = accuracy.make_tensor(shape, dtype, low=0.5, high=2.0)
    accuracy.check_op(fn, a, b, overloads=overloads)


INTEGER_CASES = [
    pytest.param(["add.Tensor"], lambda a, b: torch.add(a, b, alpha=3), id="add"),
    pytest.param(["sub.Tensor"], torch.sub, id="sub"),
    pytest.param(["mul.Tensor"], torch.mul, id="mul"),
    pytest.param(["div.Tensor"], torch.div, id="true-div"),
    pytest.param(["maximum"], torch.maximum, id="maximum"),
]


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.uint8], ids=str)
@pytest.mark.parametrize(("overloads", "fn"), INTEGER_CASES)
def test_binary_integer_is_exact(
    overloads: list[str], fn: Callable[..., torch.Tensor], dtype: torch.dtype
) -> None:
    a = accuracy.make_tensor((5, 7), dtype, low=0, high=100)
    b = accuracy.make_tensor((7,), dtype, low=1, high=9)
    accuracy.check_op(fn, a, b, overloads=overloads)


@pytest.mark.parametrize(
    ("overloads", "fn"),
    [
        pytest.param(["add.Tensor"], lambda a: a + 2.5, id="tensor-plus-float"),
        pytest.param(["add.Tensor"], lambda a: a.int() + 2.5, id="int-plus-float-promotes"),
        pytest.param(["mul.Tensor"], lambda a: a.half() * torch.tensor(3.0), id="half-times-0d"),
        pytest.param(["sub.Tensor"], lambda a: 1 - a, id="rsub-scalar"),
        pytest.param(["pow.Tensor_Scalar"], lambda a: a**3, id="pow-int-exponent"),
        pytest.param(["pow.Tensor_Scalar"], lambda a: a.abs() ** 0.5, id="pow-sqrt"),
        pytest.param(["pow.Scalar"], lambda a: torch.pow(2.0, a), id="scalar-pow"),
        pytest.param(["div.Tensor"], lambda a: a / a[:1], id="broadcast-row"),
        pytest.param(["add.Tensor"], lambda a: a.t() + a[:, :1].t(), id="transposed"),
        pytest.param(["add.Tensor"], lambda a: a[:, :1].expand(4, 6) + 1.0, id="expanded"),
    ],
)
def test_scalars_and_layouts(overloads: list[str], fn: Callable[..., torch.Tensor]) -> None:
    accuracy.check_op(fn, accuracy.make_tensor((4, 6), torch.float32), overloads=overloads)


def test_out_variant_writes_into_out() -> None:
    a, b = torch.randn(3, 4), torch.randn(4)
    out = torch.empty(3, 4)
    accuracy.check_op(lambda x, y, o: torch.add(x, y, out=o), a, b, out, overloads=["add.out"])


def test_inplace_rejects_a_result_type_it_cannot_hold() -> None:
    from gems_kernels import use_gems

    with use_gems(include=["add"]), pytest.raises(RuntimeError, match="can't be cast"):
        torch.ones(3, dtype=torch.int64).add_(torch.ones(3))
