"""Kubernetes resource quantities (``2500m``, ``16Gi``, ``1e3``): exact values, canonical text."""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Final, Literal

__all__ = ["Quantity", "QuantityFormat"]

QuantityFormat = Literal["BinarySI", "DecimalSI", "DecimalExponent"]

_BINARY: Final = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL: Final = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}
_DECIMAL_SUFFIX: Final = {exponent: suffix for suffix, exponent in _DECIMAL.items()}
_BINARY_SUFFIX: Final = {shift: suffix for suffix, shift in _BINARY.items()}
_PATTERN: Final = re.compile(
    r"(?P<number>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?:(?P<binary>[KMGTPE]i)|(?P<exponent>[eE][+-]?[0-9]+)|(?P<decimal>[numkMGTPE])?)"
)
_NANO: Final = Fraction(1, 10**9)
MAX_DIGITS: Final = 1000
"""Most digits of a quantity's number and largest exponent magnitude: far beyond any resource,
and small enough that parsing one costs microseconds (``1e999999999`` would build a number of
a billion digits)."""


class Quantity:
    """A resource quantity with Kubernetes semantics.

    The value is exact; ``str()`` gives the canonical form Kubernetes writes (values
    finer than a nano-unit round up, as Kubernetes rounds them). Equality and order
    compare values, whatever the suffix: ``Quantity.parse("1Gi") == Quantity.parse("1024Mi")``.
    """

    __slots__ = ("amount", "format")

    def __init__(self, amount: Fraction | int, format: QuantityFormat = "DecimalSI") -> None:
        self.amount = Fraction(amount)
        self.format: QuantityFormat = format

    @classmethod
    def parse(cls, text: str | int) -> Quantity:
        """Parse ``"2500m"``, ``"16Gi"``, ``"1e3"`` or an integer; ValueError names the input."""
        if isinstance(text, bool):
            raise ValueError(f"quantity must be a string or an integer, got {text!r}")
        if isinstance(text, int):
            return cls(text)
        match = _PATTERN.fullmatch(text.strip()) if isinstance(text, str) else None
        if match is None or text.strip() != text:
            raise ValueError(
                f"invalid quantity {text!r}: expected a number with an optional suffix "
                "(Ki, Mi, Gi, Ti, Pi, Ei, n, u, m, k, M, G, T, P, E or an exponent such as e3)"
            )
        exponent = match["exponent"]
        if len(match["number"]) > MAX_DIGITS or (
            exponent and (len(exponent) > 8 or abs(int(exponent[1:])) > MAX_DIGITS)
        ):
            raise ValueError(
                f"invalid quantity {text[:40]!r}{'...' if len(text) > 40 else ''}: at most "
                f"{MAX_DIGITS} digits and an exponent between -{MAX_DIGITS} and {MAX_DIGITS}"
            )
        number = Fraction(match["number"])
        if match["binary"]:
            return cls(number * 2 ** _BINARY[match["binary"]], "BinarySI")
        if match["exponent"]:
            return cls(number * Fraction(10) ** int(match["exponent"][1:]), "DecimalExponent")
        return cls(number * Fraction(10) ** _DECIMAL[match["decimal"] or ""], "DecimalSI")

    def value(self) -> int:
        """The value as an integer, rounded up (Kubernetes ``Value()``)."""
        return math.ceil(self.amount)

    def milli_value(self) -> int:
        """The value in thousandths, rounded up (Kubernetes ``MilliValue()``)."""
        return math.ceil(self.amount * 1000)

    def __str__(self) -> str:
        amount = _round_up_to_nano(self.amount)
        if self.format == "BinarySI" and abs(amount) >= 1024 and amount.denominator == 1:
            return _format_binary(int(amount))
        return _format_decimal(amount, exponent_style=self.format == "DecimalExponent")

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Quantity):
            return self.amount == other.amount
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.amount)

    def __lt__(self, other: Quantity) -> bool:
        return self.amount < other.amount

    def __le__(self, other: Quantity) -> bool:
        return self.amount <= other.amount

    def __gt__(self, other: Quantity) -> bool:
        return self.amount > other.amount

    def __ge__(self, other: Quantity) -> bool:
        return self.amount >= other.amount

    def __add__(self, other: Quantity) -> Quantity:
        """The sum, in this quantity's format (the other's if this one is zero)."""
        return Quantity(self.amount + other.amount, self._sum_format(other))

    def __sub__(self, other: Quantity) -> Quantity:
        return Quantity(self.amount - other.amount, self._sum_format(other))

    def __neg__(self) -> Quantity:
        return Quantity(-self.amount, self.format)

    def __mul__(self, factor: int | Fraction) -> Quantity:
        """The quantity times a number (Kubernetes ``Mul``), in the same format."""
        if isinstance(factor, bool) or not isinstance(factor, (int, Fraction)):
            return NotImplemented
        return Quantity(self.amount * factor, self.format)

    __rmul__ = __mul__

    def _sum_format(self, other: Quantity) -> QuantityFormat:
        return other.format if self.amount == 0 else self.format


def _round_up_to_nano(amount: Fraction) -> Fraction:
    if (amount / _NANO).denominator == 1:
        return amount
    return Fraction(math.ceil(amount / _NANO)) * _NANO


def _format_binary(amount: int) -> str:
    shift = 0
    while shift < 60 and amount % (1 << (shift + 10)) == 0:
        shift += 10
    return f"{amount >> shift}{_BINARY_SUFFIX.get(shift, '')}"


def _format_decimal(amount: Fraction, exponent_style: bool) -> str:
    if amount == 0:
        return "0"
    exponent = -9  # the amount is a whole number of nano-units (see _round_up_to_nano)
    while exponent < 18 and (amount / Fraction(10) ** (exponent + 3)).denominator == 1:
        exponent += 3
    mantissa = int(amount / Fraction(10) ** exponent)
    if exponent_style:
        return f"{mantissa}" if exponent == 0 else f"{mantissa}e{exponent}"
    return f"{mantissa}{_DECIMAL_SUFFIX[exponent]}"
