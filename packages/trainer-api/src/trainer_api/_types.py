"""Aliases for the loose wire types of the Kubernetes API."""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic.fields import FieldInfo

__all__ = ["IntOrString", "JsonObject", "QuantityValue"]


@dataclass(frozen=True)
class WireFormat:
    """Marks an ``int | str`` alias with what the string holds (for schemas and validation)."""

    name: Literal["quantity", "int-or-string"]


JsonObject = dict[str, Any]
"""A JSON object kept as is."""

QuantityValue = Annotated[int | str, WireFormat("quantity")]
"""A resource quantity as written on the wire: an integer or a string such as ``"16Gi"``."""

IntOrString = Annotated[int | str, WireFormat("int-or-string")]
"""A port number or name, or any other Kubernetes IntOrString."""


def field_type(info: FieldInfo) -> Any:
    """A field's annotation with the ``Annotated`` metadata pydantic moved aside put back."""
    if info.metadata:
        parameters = (info.annotation, *info.metadata)  # Annotated[T, *meta] needs Python 3.11
        return Annotated[parameters]
    return info.annotation


def is_optional(annotation: Any) -> bool:
    """Whether ``annotation`` is ``X | None``."""
    is_union = typing.get_origin(annotation) in (typing.Union, types.UnionType)
    return is_union and type(None) in typing.get_args(annotation)


def unwrap_optional(annotation: Any) -> Any:
    """``X | None`` -> ``X``; anything else unchanged."""
    if not is_optional(annotation):
        return annotation
    members = [member for member in typing.get_args(annotation) if member is not type(None)]
    if len(members) != 1:
        raise TypeError(f"unsupported union {annotation!r}")
    return members[0]


def wire_format(annotation: Any) -> WireFormat | None:
    """The ``WireFormat`` of an ``Annotated`` alias such as ``QuantityValue``, else None."""
    if typing.get_origin(annotation) is not Annotated:
        return None
    marks = [mark for mark in annotation.__metadata__ if isinstance(mark, WireFormat)]
    return marks[0] if marks else None
