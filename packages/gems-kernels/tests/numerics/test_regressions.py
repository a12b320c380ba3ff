"""Numerical bugs ATen does not have, each checked against ATen's own result (issue 17)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gems_kernels
import pytest
import torch


def _both(fn: Callable[[], Any]) -> tuple[Any, Any]:
    """``fn()`` on ATen and under ``use_gems()``."""
    expected = fn()
    with gems_kernels.use_gems():
        actual = fn()
    return expected, actual


@pytest.mark.parametrize(
    "fn",
    [
        pytest.param(lambda: torch.add(2.5, 1.5, alpha=2), id="add"),
        pytest.param(lambda: torch.sub(2.5, 1.5, alpha=2), id="sub"),
        pytest.param(lambda: torch.mul(2.5, 3), id="mul"),
        pytest.param(lambda: torch.div(7, 2), id="div"),
        pytest.param(lambda: torch.div(7, 2, rounding_mode="floor"), id="div-floor"),
        pytest.param(lambda: torch.mul(3, 4), id="mul-int"),
        pytest.param(lambda: torch.maximum(torch.tensor(1.0), torch.tensor(2)), id="maximum"),
    ],
)
def test_numbers_only(fn: Callable[[], torch.Tensor]) -> None:
    expected, actual = _both(fn)
    assert actual.dim() == 0
    assert actual.dtype == expected.dtype
    assert torch.equal(actual, expected)


@pytest.mark.parametrize(
    "fn",
    [
        pytest.param(lambda: torch.empty(3, dtype=torch.float64).fill_(0.1), id="fill_"),
        pytest.param(lambda: torch.full((2, 3), 0.1, dtype=torch.float64), id="full"),
        pytest.param(lambda: torch.ones(3, dtype=torch.float64) + 0.1, id="add-number"),
        pytest.param(lambda: torch.ones(3, dtype=torch.float64).add(1, alpha=0.1), id="alpha"),
        pytest.param(lambda: torch.ones(3, dtype=torch.float64) * (1 / 3), id="mul-number"),
    ],
)
def test_float64_numbers_stay_float64(fn: Callable[[], torch.Tensor]) -> None:
    expected, actual = _both(fn)
    assert torch.equal(actual, expected)


def test_float32_pow_large_exponent() -> None:
    x = torch.tensor([1.0001, 1.2, 0.9, 2.5, 1.5], dtype=torch.float32)
    exponents = torch.tensor([100.001, 100.001, 250.5, 60.25, 150.0], dtype=torch.float32)
    reference = x.double() ** exponents.double()
    with gems_kernels.use_gems():
        actual = (x**exponents).double()
        actual_scalar = (x[:3] ** 100.001).double()
    # ATen is within 5.4e-7 here; float32's half ulp is 6e-8.
    assert ((actual - reference) / reference).abs().max() < 1.2e-7
    scalar_reference = x[:3].double() ** torch.tensor(100.001, dtype=torch.float32).double()
    assert ((actual_scalar - scalar_reference) / scalar_reference).abs().max() < 1.2e-7


@pytest.mark.parametrize(
    "fn",
    [
        pytest.param(
            lambda: torch.where(
                torch.tensor([True, False, False]),
                torch.tensor([2.0, 2.0, 2.0], dtype=torch.bfloat16),
                torch.tensor(1),
            ),
            id="where",
        ),
        pytest.param(
            lambda: torch.zeros(3, dtype=torch.bfloat16).fill_(torch.tensor(3)), id="fill_"
        ),
        pytest.param(
            lambda: torch.zeros(3, dtype=torch.bfloat16).fill_(torch.tensor(259)), id="fill_-round"
        ),
        pytest.param(
            lambda: torch.ones(3, dtype=torch.bfloat16) * torch.tensor(259), id="mul-int-0d"
        ),
        pytest.param(
            lambda: torch.masked_fill(
                torch.ones(3, dtype=torch.bfloat16),
                torch.tensor([True, False, True]),
                torch.tensor(7),
            ),
            id="masked_fill",
        ),
    ],
)
def test_bfloat16_with_integer_0d_operand(fn: Callable[[], torch.Tensor]) -> None:
    expected, actual = _both(fn)
    assert actual.dtype == torch.bfloat16
    assert torch.equal(actual, expected)


def test_float32_to_bfloat16_rounds_to_nearest_even() -> None:
    # Each value sits just above a bfloat16 tie, or exactly on one; truncation gets them wrong.
    x = torch.tensor([1.0 + 2**-8 + 2**-20, 1.0 + 3 * 2**-8, -(1.0 + 2**-8 + 2**-20), 3.0e38])
    expected, actual = _both(lambda: x.to(torch.bfloat16) * torch.tensor(1.0))
    assert torch.equal(actual, expected)
    with gems_kernels.use_gems():
        # A bfloat16 tensor times a 0-d float32 tensor is computed in float32, stored as bfloat16.
        products = torch.cat([torch.ones(1, dtype=torch.bfloat16) * value for value in x])
    assert products.dtype == torch.bfloat16
    assert torch.equal(products, x.to(torch.bfloat16))


def test_tanh_of_small_inputs() -> None:
    x = torch.tensor([1e-8, -1e-8, 1e-6, 3e-4, 0.01, 1e-30, -0.0])
    reference = torch.tanh(x.double())
    with gems_kernels.use_gems():
        actual = torch.tanh(x)
    nonzero = reference != 0
    relative = ((actual.double() - reference) / reference)[nonzero].abs()
    assert relative.max() < 2e-7  # ATen: within 1.6e-8 here
    assert torch.signbit(actual[-1])


@pytest.mark.parametrize(
    ("index", "source"),
    [
        pytest.param(torch.tensor([0]), torch.tensor(2.0), id="index-1d"),
        pytest.param(torch.tensor(0), torch.tensor(2.0), id="index-0d"),
    ],
)
def test_index_add_on_0d(index: torch.Tensor, source: torch.Tensor) -> None:
    self = torch.tensor(1.0)
    expected, actual = _both(lambda: torch.index_add(self, 0, index, source, alpha=3))
    assert actual.shape == expected.shape == ()
    assert torch.equal(actual, expected)


def test_index_add_on_0d_refuses_what_aten_refuses() -> None:
    with pytest.raises(RuntimeError, match="source tensor shape must match"):
        torch.index_add(torch.tensor(1.0), 0, torch.tensor([0]), torch.ones(1))
    with gems_kernels.use_gems(), pytest.raises(RuntimeError, match="source tensor shape"):
        torch.index_add(torch.tensor(1.0), 0, torch.tensor([0]), torch.ones(1))


_CONVERSION_DTYPES = [
    torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
    torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64,
]  # fmt: skip


@pytest.mark.parametrize("target", _CONVERSION_DTYPES, ids=str)
@pytest.mark.parametrize("source", _CONVERSION_DTYPES, ids=str)
def test_every_conversion_as_aten(source: torch.dtype, target: torch.dtype) -> None:
    """``.to`` and ``copy_`` between every pair of dtypes: float to int truncates as in ATen
    (it raised "result type Float can't be cast" before), complex goes to ATen (a KeyError
    before). Values every dtype holds exactly, fractions only where the source has them."""
    values = [0.0, 1.0, 2.0, 3.0, 100.0]
    if source.is_floating_point or source.is_complex:
        values += [2.5, 7.75]
    x = torch.tensor(values).to(source)
    expected, actual = _both(lambda: x.to(target))
    assert actual.dtype == expected.dtype
    assert torch.equal(actual, expected)
    expected, actual = _both(lambda: torch.empty(len(values), dtype=target).copy_(x))
    assert torch.equal(actual, expected)


def test_a_complex_number_beside_a_real_tensor() -> None:
    x = torch.tensor([1.0, 2.0])
    expected, actual = _both(lambda: (x * 1j, x + 2j, torch.where(x > 1, x, 1j)))
    for want, got in zip(expected, actual, strict=True):
        assert got.dtype == want.dtype
        assert torch.equal(got, want)


@pytest.mark.parametrize("other", [-3.14, 2, 1e-45])
def test_a_number_operand_cast_by_aten(other: float) -> None:
    """``copysign(x, number)``: ATen's kernel casts the number's wrapped 0-d tensor with
    ``_to_copy``, which reached gems' kernel as a Python float (a TypeError before issue 39's
    OpInfo re-check)."""
    x = torch.tensor([-8.5, 0.0, 3.25, -0.0])
    expected = torch.copysign(x, other)
    with gems_kernels.use_gems():
        actual = torch.copysign(x, other)
    assert torch.equal(actual, expected) and actual.dtype == torch.float32
