"""The shape of a schema rule: a CEL rule with its Python twin, and a field's constraints."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, Literal

__all__ = ["ATOMIC", "NO_DEFAULT", "SET", "FieldSpec", "Rule", "list_map", "named_map"]

NO_DEFAULT: Final = object()
"""Marks a field without a default value."""


@dataclass(frozen=True)
class Rule:
    """A CEL rule and its Python twin; ``check`` returns True when the value is valid."""

    cel: str
    message: str
    check: Callable[[Any], bool]
    field: str | None = None
    """For a rule on an object: the field (wire name) the error is reported at."""


@dataclass(frozen=True)
class FieldSpec:
    """The schema constraints of one field of one model."""

    minimum: int | None = None
    maximum: int | None = None
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None
    min_items: int | None = None
    max_items: int | None = None
    min_properties: int | None = None
    item_max_length: int | None = None
    list_type: Literal["atomic", "set", "map"] | None = None
    map_keys: tuple[str, ...] = ()
    default: Any = NO_DEFAULT
    immutable: str | None = None
    """The message of a ``self == oldSelf`` transition rule, when the field is immutable."""
    rules: tuple[Rule, ...] = field(default=())


ATOMIC: Final = FieldSpec(list_type="atomic")
SET: Final = FieldSpec(list_type="set")


def list_map(*keys: str) -> FieldSpec:
    return FieldSpec(list_type="map", map_keys=keys)


def named_map(max_items: int | None = None, immutable: str | None = None) -> FieldSpec:
    return FieldSpec(max_items=max_items, list_type="map", map_keys=("name",), immutable=immutable)
