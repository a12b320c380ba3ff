"""Quantity: parsing, canonical text, comparison and arithmetic as Kubernetes defines them."""

from __future__ import annotations

import tracemalloc
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from trainer_api import Quantity, QuantityFormat


@pytest.mark.parametrize(
    ("text", "amount", "canonical"),
    [
        pytest.param("2500m", Fraction(5, 2), "2500m", id="milli"),
        pytest.param("16Gi", 16 * 2**30, "16Gi", id="binary"),
        pytest.param("1e3", 1000, "1e3", id="exponent"),
        pytest.param("1.5Gi", 3 * 2**29, "1536Mi", id="fractional-binary-rescaled"),
        pytest.param("0.5", Fraction(1, 2), "500m", id="fraction-to-milli"),
        pytest.param("1000m", 1, "1", id="milli-to-unit"),
        pytest.param("1500", 1500, "1500", id="no-exact-kilo"),
        pytest.param("1k", 1000, "1k", id="kilo"),
        pytest.param("0.1n", Fraction(1, 10**10), "1n", id="rounds-up-to-nano"),
        pytest.param("12e6", 12 * 10**6, "12e6", id="exponent-kept"),
        pytest.param("512", 512, "512", id="binary-below-1024-is-decimal"),
        pytest.param("1025Ki", 1025 * 1024, "1025Ki", id="binary-not-a-multiple-of-1024"),
        pytest.param(".5", Fraction(1, 2), "500m", id="leading-dot"),
        pytest.param("-1.5k", -1500, "-1500", id="negative"),
        pytest.param("+2", 2, "2", id="plus-sign"),
        pytest.param("0", 0, "0", id="zero"),
    ],
)
def test_parse_gives_exact_value_and_kubernetes_canonical_text(
    text: str, amount: Fraction | int, canonical: str
) -> None:
    quantity = Quantity.parse(text)
    assert quantity.amount == amount
    assert str(quantity) == canonical


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("", id="empty"),
        pytest.param("1.2.3", id="two-dots"),
        pytest.param("1KiB", id="unknown-suffix"),
        pytest.param("ki", id="no-number"),
        pytest.param(" 1", id="space"),
        pytest.param("1e", id="exponent-without-digits"),
    ],
)
def test_parse_rejects_malformed_text_naming_it(text: str) -> None:
    with pytest.raises(ValueError, match="invalid quantity"):
        Quantity.parse(text)


def test_integers_parse_as_decimal_values() -> None:
    assert Quantity.parse(2) == Quantity.parse("2")
    with pytest.raises(ValueError, match="string or an integer"):
        Quantity.parse(True)


def test_comparison_uses_value_not_suffix() -> None:
    assert Quantity.parse("1Gi") == Quantity.parse("1024Mi")
    assert Quantity.parse("500m") < Quantity.parse("1")
    assert Quantity.parse("1k") > Quantity.parse("999")
    assert Quantity.parse("1e3") >= Quantity.parse("1k")
    assert Quantity.parse("1e3") <= Quantity.parse("1k")
    assert len({Quantity.parse("1Gi"), Quantity.parse("1024Mi")}) == 1


def test_addition_keeps_the_left_format_unless_it_is_zero() -> None:
    assert str(Quantity.parse("1Gi") + Quantity.parse("512Mi")) == "1536Mi"
    assert str(Quantity.parse("100m") + Quantity.parse("1")) == "1100m"
    assert str(Quantity(0) + Quantity.parse("1Gi")) == "1Gi"
    assert str(Quantity.parse("1") - Quantity.parse("250m")) == "750m"


def test_multiplication_by_an_integer() -> None:
    assert str(Quantity.parse("250m") * 4) == "1"
    assert str(3 * Quantity.parse("2Gi")) == "6Gi"
    assert str(Quantity.parse("1.5") * Fraction(1, 3)) == "500m"


def test_integer_views_round_up_like_kubernetes() -> None:
    assert Quantity.parse("1500m").value() == 2
    assert Quantity.parse("0.1m").milli_value() == 1
    assert Quantity.parse("16Gi").value() == 17179869184


nano_amounts = st.integers(-(10**24), 10**24).map(lambda nanos: Fraction(nanos, 10**9))
formats = st.sampled_from(["BinarySI", "DecimalSI", "DecimalExponent"])


@settings(max_examples=300, deadline=None)
@given(amount=nano_amounts, format=formats)
def test_canonical_text_parses_back_to_the_same_value(
    amount: Fraction, format: QuantityFormat
) -> None:
    quantity = Quantity(amount, format)
    assert Quantity.parse(str(quantity)) == quantity


@settings(max_examples=200, deadline=None)
@given(left=nano_amounts, right=nano_amounts, factor=st.integers(-1000, 1000))
def test_arithmetic_matches_exact_fractions(left: Fraction, right: Fraction, factor: int) -> None:
    a, b = Quantity(left), Quantity(right)
    assert (a + b).amount == left + right
    assert (a - b).amount == left - right
    assert (a * factor).amount == left * factor
    assert (a < b) == (left < right)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("1e999999999", id="huge-exponent"),
        pytest.param("1e-99999999999999", id="huge-negative-exponent"),
        pytest.param("1" * 5000, id="too-many-digits"),
        pytest.param("1e1001", id="just-over"),
    ],
)
def test_quantities_too_large_to_be_resources_are_refused_at_once(text: str) -> None:
    """``1e999999999`` used to build a billion-digit number (a webhook hang); ``1e999999``
    took a second. Refused before anything is built: the memory it takes stays small (a
    million-digit number alone is 400 KiB); the time is benchmarks/bench_hostile_input.py's."""
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match="at most 1000 digits and an exponent between"):
            Quantity.parse(text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024, f"{peak} bytes"


def test_the_largest_exponent_still_parses() -> None:
    assert Quantity.parse("1e1000") == Quantity(10**1000)
