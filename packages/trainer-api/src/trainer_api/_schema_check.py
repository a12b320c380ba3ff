"""Checks of the schema rules in ``_rules`` against an object (and its old version on update)."""

from __future__ import annotations

import re
import typing
from collections.abc import Iterator, Sequence
from functools import cache
from typing import Any

from trainer_api._base import ApiModel
from trainer_api._errors import FieldError, format_path
from trainer_api._fieldspec import FieldSpec
from trainer_api._quantity import Quantity
from trainer_api._rules import CLASS_RULES, specs_for
from trainer_api._types import field_type, unwrap_optional, wire_format

__all__ = ["schema_errors"]

Path = tuple[str | int, ...]


def schema_errors(obj: ApiModel, old: ApiModel | None = None) -> list[FieldError]:
    """Every broken schema rule of ``obj``; with ``old``, also the transition rules."""
    return list(_model_errors(obj, old, ()))


def _model_errors(model: ApiModel, old: ApiModel | None, path: Path) -> Iterator[FieldError]:
    model_type = type(model)
    for rule in CLASS_RULES.get(model_type, ()):
        if not rule.check(model):
            where = (*path, *rule.field.split(".")) if rule.field else path
            yield FieldError(format_path(where), rule.message)
    specs = specs_for(model_type)
    quantities = _quantity_fields(model_type)
    for name, info in model_type.model_fields.items():
        value = getattr(model, name)
        if value is None:
            continue
        here = (*path, info.alias or name)
        old_value = getattr(old, name) if old is not None else None
        spec = specs.get(name)
        if spec is not None:
            yield from _field_errors(spec, value, old_value, here)
        if name in quantities:
            yield from _quantity_errors(value, here)
        yield from _value_errors(value, old_value, spec, here)


def _value_errors(
    value: object, old: object, spec: FieldSpec | None, path: Path
) -> Iterator[FieldError]:
    if isinstance(value, ApiModel):
        yield from _model_errors(value, old if isinstance(old, ApiModel) else None, path)
    elif isinstance(value, list):
        olds = _correlate(value, old, spec)
        for index, item in enumerate(value):
            yield from _value_errors(item, olds[index], None, (*path, index))


def _correlate(items: list[Any], old: object, spec: FieldSpec | None) -> list[Any]:
    """The old item of each new one, matched by map keys (CEL correlates only list maps)."""
    if spec is None or spec.list_type != "map" or not isinstance(old, list):
        return [None] * len(items)
    by_key = {_key(item, spec.map_keys): item for item in old}
    return [by_key.get(_key(item, spec.map_keys)) for item in items]


def _key(item: object, keys: Sequence[str]) -> tuple[object, ...]:
    if isinstance(item, ApiModel):
        wire = item.model_dump(by_alias=True)
        return tuple(wire.get(key) for key in keys)
    return (item,)


def _field_errors(spec: FieldSpec, value: Any, old: Any, path: Path) -> Iterator[FieldError]:
    where = format_path(path)
    if isinstance(value, int) and not isinstance(value, bool):
        if spec.minimum is not None and value < spec.minimum:
            yield FieldError(
                where, f"must be greater than or equal to {spec.minimum} (got {value})"
            )
        if spec.maximum is not None and value > spec.maximum:
            yield FieldError(where, f"must be less than or equal to {spec.maximum} (got {value})")
    if isinstance(value, str):
        if spec.min_length is not None and len(value) < spec.min_length:
            yield FieldError(where, f"must be at least {spec.min_length} characters long")
        if spec.max_length is not None and len(value) > spec.max_length:
            yield FieldError(where, f"may not be longer than {spec.max_length} characters")
        if spec.pattern is not None and re.search(spec.pattern, value) is None:
            yield FieldError(where, f"must match {spec.pattern!r} (got {value!r})")
    if isinstance(value, list):
        yield from _list_errors(spec, value, path)
    minimum = spec.min_properties
    if isinstance(value, ApiModel) and minimum is not None and len(value.to_dict()) < minimum:
        yield FieldError(where, f"must have at least {minimum} field(s) set")
    for rule in spec.rules:
        if not rule.check(value):
            yield FieldError(where, rule.message)
    if spec.immutable is not None and old is not None and _wire(value) != _wire(old):
        yield FieldError(where, spec.immutable)


def _list_errors(spec: FieldSpec, items: list[Any], path: Path) -> Iterator[FieldError]:
    where = format_path(path)
    if spec.min_items is not None and len(items) < spec.min_items:
        yield FieldError(where, f"must have at least {spec.min_items} items")
    if spec.max_items is not None and len(items) > spec.max_items:
        yield FieldError(where, f"must have at most {spec.max_items} items (got {len(items)})")
    if spec.item_max_length is not None:
        for index, item in enumerate(items):
            if isinstance(item, str) and len(item) > spec.item_max_length:
                message = f"may not be longer than {spec.item_max_length} characters"
                yield FieldError(format_path((*path, index)), message)
    if spec.list_type in ("map", "set"):
        seen: set[tuple[object, ...]] = set()
        for index, item in enumerate(items):
            key = _key(item, spec.map_keys)
            if key in seen:
                shown = ", ".join(
                    f"{name}={value!r}" for name, value in zip(spec.map_keys, key, strict=False)
                )
                yield FieldError(
                    format_path((*path, index)), f"duplicate entry ({shown or repr(key[0])})"
                )
            seen.add(key)


def _quantity_errors(value: int | str | dict[str, int | str], path: Path) -> Iterator[FieldError]:
    entries = value.items() if isinstance(value, dict) else [(None, value)]
    for key, quantity in entries:
        try:
            Quantity.parse(quantity)
        except ValueError as error:
            yield FieldError(format_path(path if key is None else (*path, key)), str(error))


def _wire(value: object) -> object:
    if isinstance(value, ApiModel):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    if isinstance(value, list):
        return [_wire(item) for item in value]
    return value


@cache
def _quantity_fields(model_type: type[ApiModel]) -> frozenset[str]:
    """Attributes typed as quantities (``QuantityValue`` or a map of them)."""
    return frozenset(
        name
        for name, info in model_type.model_fields.items()
        if _is_quantity(field_type(info)) or _is_quantity_map(field_type(info))
    )


def _is_quantity(annotation: object) -> bool:
    wire = wire_format(unwrap_optional(annotation))
    return wire is not None and wire.name == "quantity"


def _is_quantity_map(annotation: object) -> bool:
    annotation = unwrap_optional(annotation)
    return typing.get_origin(annotation) is dict and _is_quantity(typing.get_args(annotation)[1])
