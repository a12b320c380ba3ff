"""Aliases for the loose wire types of the Kubernetes API."""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from annotated_types import Interval
from pydantic.fields import FieldInfo

__all__ = ["Int32", "Int64", "IntFormat", "IntOrString", "JsonObject", "QuantityValue"]


@dataclass(frozen=True)
class WireFormat:
    """Marks an ``int | str`` alias with what the string holds (for schemas and validation)."""

    name: Literal["quantity", "int-or-string"]


@dataclass(frozen=True)
class IntFormat:
    """Marks an integer alias with its OpenAPI format (the Go type upstream declares)."""

    name: Literal["int32", "int64"]


Int32 = Annotated[int, IntFormat("int32"), Interval(ge=-(2**31), le=2**31 - 1)]
"""An integer the API declares as int32: parsing refuses values outside its range."""

Int64 = Annotated[int, IntFormat("int64"), Interval(ge=-(2**63), le=2**63 - 1)]
"""An integer the API declares as int64: parsing refuses values outside its range."""

IntOrString = Annotated[Int32 | str, WireFormat("int-or-string")]
"""A port number or name, or any other Kubernetes IntOrString (the integer is an int32)."""

JsonObject = dict[str, Any]
"""A JSON object kept as is."""

QuantityValue = Annotated[int | str, WireFormat("quantity")]
"""A resource quantity as written on the wire: an integer or a string such as ``"16Gi"``."""


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


def int_format(annotation: Any) -> IntFormat | None:
    """The ``IntFormat`` of ``Int32`` or ``Int64``, else None."""
    if typing.get_origin(annotation) is not Annotated:
        return None
    marks = [mark for mark in annotation.__metadata__ if isinstance(mark, IntFormat)]
    return marks[0] if marks else None


def wire_format(annotation: Any) -> WireFormat | None:
    """The ``WireFormat`` of an ``Annotated`` alias such as ``QuantityValue``, else None."""
    if typing.get_origin(annotation) is not Annotated:
        return None
    marks = [mark for mark in annotation.__metadata__ if isinstance(mark, WireFormat)]
    return marks[0] if marks else None
