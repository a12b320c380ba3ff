"""Object metadata and the small meta/v1 types shared by every kind."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, PlainSerializer

from trainer_api._base import ApiModel
from trainer_api._types import Int64, JsonObject

__all__ = [
    "Condition",
    "LabelSelector",
    "LabelSelectorRequirement",
    "ListMeta",
    "ObjectMeta",
    "OwnerReference",
    "Time",
]


def format_time(value: datetime) -> str:
    """RFC 3339 as Kubernetes writes it: UTC with a ``Z`` suffix."""
    if value.tzinfo is not None:
        value = value.astimezone(timezone.utc).replace(tzinfo=None)
    text = value.isoformat()
    return f"{text}Z"


def parse_time(value: object) -> object:
    """An RFC 3339 string as a datetime; anything else is left to the datetime validator."""
    if not isinstance(value, str):
        return value
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        message = f"expected an RFC 3339 time such as 2026-01-02T03:04:05Z, got {value!r}"
        raise ValueError(message) from None


Time = Annotated[
    datetime,
    BeforeValidator(parse_time),
    PlainSerializer(format_time, return_type=str, when_used="json"),
]
"""A meta/v1 Time: parsed from RFC 3339, written back with a ``Z`` suffix."""


class OwnerReference(ApiModel):
    """meta/v1 OwnerReference."""

    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class ObjectMeta(ApiModel):
    """meta/v1 ObjectMeta (the fields a client may read or write)."""

    name: str | None = None
    generate_name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: Int64 | None = None
    creation_timestamp: Time | None = None
    deletion_timestamp: Time | None = None
    deletion_grace_period_seconds: Int64 | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    owner_references: list[OwnerReference] | None = None
    finalizers: list[str] | None = None
    managed_fields: list[JsonObject] | None = None
    self_link: str | None = None


class ListMeta(ApiModel):
    """meta/v1 ListMeta."""

    resource_version: str | None = None
    continue_: str | None = Field(default=None, alias="continue")
    remaining_item_count: Int64 | None = None
    self_link: str | None = None


class Condition(ApiModel):
    """meta/v1 Condition."""

    type: str
    status: Literal["True", "False", "Unknown"]
    reason: str
    message: str
    last_transition_time: Time
    observed_generation: Int64 | None = None


class LabelSelectorRequirement(ApiModel):
    """meta/v1 LabelSelectorRequirement."""

    key: str
    operator: str
    values: list[str] | None = None


class LabelSelector(ApiModel):
    """meta/v1 LabelSelector."""

    match_labels: dict[str, str] | None = None
    match_expressions: list[LabelSelectorRequirement] | None = None
