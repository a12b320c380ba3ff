"""Checks of caller arguments, each raising InvalidArgumentError that names the argument."""

from __future__ import annotations

from mpi_runtime.errors import InvalidArgumentError


def require_positive_int(value: object, argument: str) -> int:
    """``value`` if it is an int >= 1 (bools refused)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgumentError(argument, f"expected an integer >= 1, got {value!r}")
    return value


def require_text(value: object, argument: str, what: str) -> str:
    """``value`` if it is a non-empty string."""
    if not isinstance(value, str) or not value:
        raise InvalidArgumentError(argument, f"expected {what}, got {value!r}")
    return value
