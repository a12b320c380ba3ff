"""The base model every API type derives from: camelCase wire names, unknown fields on request."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, ValidationInfo, model_validator
from pydantic.alias_generators import to_camel

__all__ = ["KEEP_UNKNOWN_FIELDS", "ApiModel", "KubernetesObject"]

KEEP_UNKNOWN_FIELDS: Final = MappingProxyType({"unknown_fields": "keep"})
"""Validation context that keeps fields a model does not define (``model_extra``)."""


class ApiModel(BaseModel):
    """A Kubernetes-style object: snake_case attributes, camelCase wire names.

    Building a model from Python or ``model_validate`` rejects fields it does not define (a
    misspelt keyword is an error). ``trainer_api.parse`` validates with ``KEEP_UNKNOWN_FIELDS``,
    so that manifests round-trip: lenient parsing keeps unknown fields in ``model_extra`` and
    writes them back; strict parsing reports them with their full path.
    """

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="allow",
        validate_default=False,
        protected_namespaces=(),
    )

    @model_validator(mode="after")
    def _reject_unknown_fields(self, info: ValidationInfo) -> ApiModel:
        context = info.context if isinstance(info.context, Mapping) else {}
        if self.model_extra and context.get("unknown_fields") != "keep":
            names = ", ".join(repr(name) for name in self.model_extra)
            raise ValueError(f"{type(self).__name__} has no field {names}")
        return self

    def to_dict(self) -> dict[str, Any]:
        """The JSON form with wire names; fields never set are left out."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)


class KubernetesObject(ApiModel):
    """A top-level object: ``apiVersion`` and ``kind`` always count as set, so they are written."""

    def model_post_init(self, context: Any, /) -> None:
        """Mark the type fields as set even when they came from their defaults."""
        self.__pydantic_fields_set__.update(("api_version", "kind"))
