"""The base model every API type derives from: camelCase wire names, unknown fields kept."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

__all__ = ["ApiModel", "KubernetesObject"]


class ApiModel(BaseModel):
    """A Kubernetes-style object: snake_case attributes, camelCase wire names.

    Unknown fields are kept (``model_extra``) so that any manifest round-trips; strict
    parsing (``trainer_api.parse``) rejects them afterwards with their full path.
    """

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="allow",
        validate_default=False,
        protected_namespaces=(),
    )

    def to_dict(self) -> dict[str, Any]:
        """The JSON form with wire names; fields never set are left out."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)


class KubernetesObject(ApiModel):
    """A top-level object: ``apiVersion`` and ``kind`` always count as set, so they are written."""

    def model_post_init(self, context: Any, /) -> None:
        """Mark the type fields as set even when they came from their defaults."""
        self.__pydantic_fields_set__.update(("api_version", "kind"))
