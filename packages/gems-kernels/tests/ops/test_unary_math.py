"""Unary math against the float64 reference, every shape, dtype and layout."""

from __future__ import annotations

from collections.abc import Callable

import gems_kernels
import pytest
import torch
from gems_kernels import accuracy

POSITIVE = {"log", "log2", "sqrt", "rsqrt", "reciprocal"}
CASES = [
    pytest.param(name, getattr(torch, name), id=name)
    for name in (
        "abs", "neg", "floor", "ceil", "exp", "exp2", "log", "log2", "log1p", "sqrt", "rsqrt",
        "sin", "cos", "erf", "tanh", "sigmoid", "reciprocal", "isnan", "isinf",
    )
]  # fmt: skip


@pytest.mark.parametrize(("shape", "dtype", "layout"), accuracy.pointwise_variants())
@pytest.mark.parametrize(("name", "fn"), CASES)
def test_unary(
    name: str,
    fn: Callable[..., torch.Tensor],
    shape: tuple[int, ...],
    dtype: torch.dtype,
    layout: str,
) -> None:
    low = 0.25 if name in POSITIVE else -3.0
    x = accuracy.arrange(accuracy.make_tensor(shape, dtype, low=low), layout)
    accuracy.check_op(fn, x, overloads=[name])


@pytest.mark.parametrize(
    ("overload", "fn"),
    [
        pytest.param("exp_", torch.exp_, id="exp_"),
        pytest.param("sqrt.out", lambda x: torch.sqrt(x, out=torch.empty_like(x)), id="sqrt-out"),
        pytest.param("abs", torch.abs, id="abs-int"),
        pytest.param("neg", torch.neg, id="neg-int"),
        pytest.param("exp", torch.exp, id="exp-int-to-float"),
    ],
)
def test_variants_and_integer_inputs(overload: str, fn: Callable[..., torch.Tensor]) -> None:
    dtype = torch.float32 if overload in ("exp_", "sqrt.out") else torch.int32
    x = accuracy.make_tensor((4, 5), dtype, low=0 if overload == "sqrt.out" else -5, high=5)
    accuracy.check_op(fn, x, overloads=[overload])


def test_special_values() -> None:
    x = torch.tensor([float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1.0])
    accuracy.check_op(torch.isnan, x, overloads=["isnan"])
    accuracy.check_op(torch.isinf, x, overloads=["isinf"])
    accuracy.check_op(torch.isneginf, x, overloads=["isneginf"])
    accuracy.check_op(torch.isposinf, x, overloads=["isposinf"])
    accuracy.check_op(torch.isneginf, x.bfloat16(), overloads=["isneginf"])
    accuracy.check_op(torch.exp, x, overloads=["exp"])
    accuracy.check_op(torch.tanh, x[1:], overloads=["tanh"])


def test_isfinite_called_directly() -> None:
    """``gems_kernels.ops.isfinite`` is exposed but not in the registration table."""
    x = torch.tensor([float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1.0])
    accuracy.check_fused(gems_kernels.ops.isfinite, torch.isfinite, x)
