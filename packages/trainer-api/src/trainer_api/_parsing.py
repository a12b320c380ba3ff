"""From YAML or dicts to typed objects, chosen by ``apiVersion`` and ``kind``."""

from __future__ import annotations

import difflib
import typing
from collections.abc import Iterator, Mapping
from typing import Any, Final

import pydantic
import yaml

from trainer_api._base import KEEP_UNKNOWN_FIELDS, ApiModel, KubernetesObject
from trainer_api._errors import FieldError, ValidationError, format_path
from trainer_api._jobset import JOBSET_API_VERSION, JobSet, JobSetList
from trainer_api._optimization import OptimizationJob, OptimizationJobList
from trainer_api._runtime import (
    ClusterTrainingRuntime,
    ClusterTrainingRuntimeList,
    TrainingRuntime,
    TrainingRuntimeList,
)
from trainer_api._trainjob import TrainJob, TrainJobList
from trainer_api._types import field_type, unwrap_optional
from trainer_api._wellknown import TRAINER_API_VERSION
from trainer_api._yaml import LimitError, check_value, load_documents

__all__ = ["KINDS", "ApiObject", "load_yaml", "parse", "parse_all"]

ApiObject = (
    TrainJob
    | TrainJobList
    | TrainingRuntime
    | TrainingRuntimeList
    | ClusterTrainingRuntime
    | ClusterTrainingRuntimeList
    | JobSet
    | JobSetList
    | OptimizationJob
    | OptimizationJobList
)
"""Any object ``parse`` returns."""

KINDS: Final[Mapping[str, tuple[str, type[KubernetesObject]]]] = {
    "TrainJob": (TRAINER_API_VERSION, TrainJob),
    "TrainJobList": (TRAINER_API_VERSION, TrainJobList),
    "TrainingRuntime": (TRAINER_API_VERSION, TrainingRuntime),
    "TrainingRuntimeList": (TRAINER_API_VERSION, TrainingRuntimeList),
    "ClusterTrainingRuntime": (TRAINER_API_VERSION, ClusterTrainingRuntime),
    "ClusterTrainingRuntimeList": (TRAINER_API_VERSION, ClusterTrainingRuntimeList),
    "JobSet": (JOBSET_API_VERSION, JobSet),
    "JobSetList": (JOBSET_API_VERSION, JobSetList),
    "OptimizationJob": (TRAINER_API_VERSION, OptimizationJob),
    "OptimizationJobList": (TRAINER_API_VERSION, OptimizationJobList),
}
"""Each kind this package knows, with its apiVersion and model."""


def load_yaml(text: str | bytes) -> list[Any]:
    """The non-empty documents of a YAML stream (bytes: UTF-8), as plain values.

    Read as the API server reads YAML, with its limits: no nesting deeper than ``MAX_DEPTH``,
    no excessive or recursive aliasing, no duplicate mapping keys. Raises ``ValidationError``.
    """
    try:
        return load_documents(text)
    except UnicodeDecodeError as error:
        message = f"not UTF-8 text: byte {error.object[error.start]:#04x} at offset {error.start}"
        raise ValidationError([FieldError("", message)]) from None
    except yaml.YAMLError as error:
        raise ValidationError([FieldError("", f"invalid YAML: {error}")]) from None


def parse(doc: str | bytes | Mapping[str, Any], strict: bool = True) -> ApiObject:
    """The typed object for one YAML document (text, or UTF-8 bytes) or dict.

    ``strict`` (for user input) also rejects fields the API does not have; lenient parsing
    (for objects read back from a cluster) keeps them. Raises ``ValidationError``.
    """
    if isinstance(doc, (str, bytes)):
        documents = load_yaml(doc)
        if len(documents) != 1:
            raise ValidationError(
                [FieldError("", f"expected one YAML document, got {len(documents)}")]
            )
        doc = documents[0]
    return _parse_object(doc, strict)


def parse_all(text: str | bytes, strict: bool = True) -> list[ApiObject]:
    """The typed objects of a multi-document YAML stream, in order."""
    documents = load_yaml(text)
    objects: list[ApiObject] = []
    errors: list[FieldError] = []
    for index, document in enumerate(documents):
        try:
            objects.append(_parse_object(document, strict))
        except ValidationError as error:
            errors.extend(
                FieldError(f"[{index}]" + ("." + e.field if e.field else ""), e.message)
                for e in error.errors
            )
    if errors:
        raise ValidationError(errors)
    return objects


def _parse_object(doc: object, strict: bool) -> ApiObject:
    if not isinstance(doc, Mapping):
        message = f"expected a mapping with apiVersion and kind, got {type(doc).__name__}"
        raise ValidationError([FieldError("", message)])
    try:
        check_value(dict(doc))
    except LimitError as error:
        raise ValidationError([FieldError("", str(error))]) from None
    model = _model_for(doc)
    errors = list(_unknown_fields(model, doc, ())) if strict else []
    try:
        parsed = model.model_validate(dict(doc), strict=True, context=KEEP_UNKNOWN_FIELDS)
    except pydantic.ValidationError as error:
        errors[:0] = _type_errors(error.errors(include_url=False))
    if errors:
        raise ValidationError(errors)
    return parsed  # type: ignore[return-value]


def _model_for(doc: Mapping[str, Any]) -> type[KubernetesObject]:
    kind = doc.get("kind")
    api_version = doc.get("apiVersion")
    if not isinstance(kind, str) or not kind:
        raise ValidationError([FieldError("kind", "required: the kind of the object")])
    if kind not in KINDS:
        known = ", ".join(sorted(KINDS))
        raise ValidationError(
            [FieldError("kind", f"unknown kind {kind!r}; expected one of {known}")]
        )
    expected, model = KINDS[kind]
    if api_version != expected:
        raise ValidationError(
            [FieldError("apiVersion", f"{kind} is served as {expected!r}, got {api_version!r}")]
        )
    return model


def _wire_loc(loc: tuple[str | int, ...]) -> tuple[str | int, ...]:
    """Pydantic's location without the union-member and function tags it inserts."""
    return tuple(
        part for part in loc if not (isinstance(part, str) and ("[" in part or part in _TAGS))
    )


_TAGS: Final = frozenset({"int", "str", "bool", "float", "list", "dict"})


def _type_errors(items: list[Any]) -> list[FieldError]:
    """One FieldError per field: the members of a failed union are joined with "or"."""
    problems: dict[str, list[str]] = {}
    inputs: dict[str, object] = {}
    for item in items:
        field = format_path(_wire_loc(item["loc"]))
        problems.setdefault(field, []).append(_problem(item))
        inputs[field] = item.get("input")
    return [
        FieldError(field, _joined(list(dict.fromkeys(found))) + _shown(inputs[field]))
        for field, found in problems.items()
    ]


def _joined(problems: list[str]) -> str:
    """``["Input should be a", "Input should be b"]`` -> ``"Input should be a or b"``."""
    prefix = "Input should be "
    if len(problems) > 1 and all(problem.startswith(prefix) for problem in problems):
        return prefix + " or ".join(problem.removeprefix(prefix) for problem in problems)
    return " or ".join(problems)


def _problem(item: Mapping[str, Any]) -> str:
    if item["type"] == "missing":
        return "required field is missing"
    return str(item["msg"])


def _shown(value: object) -> str:
    if isinstance(value, (str, int, float, bool)):
        return f" (got {value!r})"
    if value is None or isinstance(value, Mapping):
        return ""
    return f" (got {type(value).__name__})"


def _unknown_fields(
    model: type[ApiModel], data: Mapping[str, Any], path: tuple[str | int, ...]
) -> Iterator[FieldError]:
    """A FieldError for every key of ``data``, at any depth, that ``model`` does not define."""
    fields = {info.alias or name: info for name, info in model.model_fields.items()}
    for key, value in data.items():
        info = fields.get(key) or model.model_fields.get(key)
        if info is None:
            hint = difflib.get_close_matches(str(key), list(fields), n=1)
            suggestion = f'; did you mean "{hint[0]}"?' if hint else ""
            yield FieldError(format_path((*path, key)), f'unknown field "{key}"{suggestion}')
        else:
            yield from _unknown_in_value(field_type(info), value, (*path, key))


def _unknown_in_value(
    annotation: Any, value: object, path: tuple[str | int, ...]
) -> Iterator[FieldError]:
    annotation = unwrap_optional(annotation)
    if typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    if isinstance(annotation, type) and issubclass(annotation, ApiModel):
        if isinstance(value, Mapping):
            yield from _unknown_fields(annotation, value, path)
    elif typing.get_origin(annotation) is list and isinstance(value, list):
        item_type = typing.get_args(annotation)[0]
        for index, item in enumerate(value):
            yield from _unknown_in_value(item_type, item, (*path, index))
