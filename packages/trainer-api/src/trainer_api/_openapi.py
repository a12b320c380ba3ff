"""OpenAPI v3 structural schemas of the models, with the rules of ``_rules`` folded in."""

from __future__ import annotations

import typing
from datetime import datetime
from typing import Annotated, Any, Final

from trainer_api._base import ApiModel
from trainer_api._fieldspec import NO_DEFAULT, FieldSpec, Rule
from trainer_api._meta import ObjectMeta
from trainer_api._rules import CLASS_RULES, specs_for
from trainer_api._types import field_type, int_format, unwrap_optional, wire_format

__all__ = ["QUANTITY_PATTERN", "model_schema"]

QUANTITY_PATTERN: Final = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)

Schema = dict[str, Any]

_EMBEDDED_METADATA: Final[Schema] = {
    "type": "object",
    "properties": {
        "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
        "finalizers": {"type": "array", "items": {"type": "string"}},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "name": {"type": "string"},
        "namespace": {"type": "string"},
    },
}
"""What the API server keeps of the metadata of an embedded template."""


def model_schema(model_type: type[ApiModel], root: bool = False) -> Schema:
    """The structural schema of a model; ``root`` for a CRD's top-level object."""
    properties: Schema = {}
    required: list[str] = []
    specs = specs_for(model_type)
    for name, info in model_type.model_fields.items():
        wire = info.alias or name
        if root and wire in ("apiVersion", "kind", "metadata"):
            properties[wire] = {"type": "object" if wire == "metadata" else "string"}
            continue
        schema = _annotation_schema(field_type(info))
        spec = specs.get(name)
        if spec is not None:
            _apply_spec(schema, spec)
        properties[wire] = schema
        if info.is_required() and not root:
            required.append(wire)
    schema = {"description": _summary(model_type), "type": "object", "properties": properties}
    if required:
        schema["required"] = required
    rules = CLASS_RULES.get(model_type, ())
    if rules:
        schema["x-kubernetes-validations"] = [
            _rule(rule, field_path=rule.field in properties) for rule in rules
        ]
    return schema


def _annotation_schema(annotation: Any) -> Schema:
    annotation = unwrap_optional(annotation)
    origin = typing.get_origin(annotation)
    arguments = typing.get_args(annotation)
    wire = wire_format(annotation)
    if wire is not None:
        schema: Schema = {
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "x-kubernetes-int-or-string": True,
        }
        if wire.name == "quantity":
            schema["pattern"] = QUANTITY_PATTERN
        return schema
    integer = int_format(annotation)
    if integer is not None:
        return {"type": "integer", "format": integer.name}
    if origin is Annotated:
        return _annotation_schema(arguments[0])
    if origin is typing.Literal:
        return {"type": "string", "enum": list(arguments)}
    if origin is list:
        return {"type": "array", "items": _annotation_schema(arguments[0])}
    if origin is dict:
        if arguments[1] is Any:
            return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        return {"type": "object", "additionalProperties": _annotation_schema(arguments[1])}
    if annotation is ObjectMeta:
        return typing.cast(Schema, _copy(_EMBEDDED_METADATA))
    if isinstance(annotation, type) and issubclass(annotation, ApiModel):
        return model_schema(annotation)
    if annotation is datetime:
        return {"type": "string", "format": "date-time"}
    scalar = {str: "string", bool: "boolean", int: "integer"}.get(annotation)
    if scalar is None:
        raise TypeError(f"no schema for {annotation!r}")
    return {"type": scalar}


def _apply_spec(schema: Schema, spec: FieldSpec) -> None:
    keywords = {
        "default": None if spec.default is NO_DEFAULT else spec.default,
        "minimum": spec.minimum,
        "maximum": spec.maximum,
        "minLength": spec.min_length,
        "maxLength": spec.max_length,
        "pattern": spec.pattern,
        "minItems": spec.min_items,
        "maxItems": spec.max_items,
        "minProperties": spec.min_properties,
    }
    schema.update({key: value for key, value in keywords.items() if value is not None})
    if spec.default is not NO_DEFAULT and spec.default is None:
        raise ValueError("a default of null cannot be declared in a structural schema")
    if spec.item_max_length is not None:
        schema["items"]["maxLength"] = spec.item_max_length
    if spec.list_type is not None:
        schema["x-kubernetes-list-type"] = spec.list_type
    if spec.map_keys:
        schema["x-kubernetes-list-map-keys"] = list(spec.map_keys)
    rules = [_rule(rule) for rule in spec.rules]
    if spec.immutable is not None:
        rules.append({"rule": "self == oldSelf", "message": spec.immutable})
    if rules:
        # The field's own rules first, then those of its type (``model_schema``).
        schema["x-kubernetes-validations"] = rules + schema.get("x-kubernetes-validations", [])


def _rule(rule: Rule, field_path: bool = False) -> Schema:
    """A CEL rule; ``field_path`` when its field is a property the schema declares."""
    result: Schema = {"rule": rule.cel, "message": rule.message}
    if field_path:
        result["fieldPath"] = f".{rule.field}"
    return result


def _summary(model_type: type[ApiModel]) -> str:
    return (model_type.__doc__ or model_type.__name__).strip().splitlines()[0]


def _copy(value: object) -> object:
    if isinstance(value, dict):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy(item) for item in value]
    return value
