"""Errors of the API package.

ApiError
└── ValidationError      one or more FieldErrors (bad kind, bad field, broken rule)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["ApiError", "FieldError", "ValidationError", "format_path"]


def format_path(path: Sequence[str | int]) -> str:
    """``("spec", "trainer", "env", 2, "name")`` -> ``"spec.trainer.env[2].name"``."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else part
    return text


@dataclass(frozen=True)
class FieldError:
    """One problem with an object: the field path (wire names) and what is wrong."""

    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}" if self.field else self.message


class ApiError(Exception):
    """Base class of the errors this package raises."""


class ValidationError(ApiError):
    """An object is invalid; ``errors`` lists every problem found."""

    def __init__(self, errors: Sequence[FieldError]) -> None:
        self.errors = list(errors)
        super().__init__("\n".join(str(error) for error in self.errors))
