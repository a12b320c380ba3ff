"""From YAML or dicts to typed objects, chosen by ``apiVersion`` and ``kind``."""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping
from typing import Any, Final

import pydantic
import yaml

from trainer_api._base import ApiModel, KubernetesObject
from trainer_api._errors import FieldError, ValidationError, format_path
from trainer_api._jobset import JOBSET_API_VERSION, JobSet, JobSetList
from trainer_api._runtime import (
    ClusterTrainingRuntime,
    ClusterTrainingRuntimeList,
    TrainingRuntime,
    TrainingRuntimeList,
)
from trainer_api._trainjob import TrainJob, TrainJobList
from trainer_api._wellknown import TRAINER_API_VERSION
from trainer_api._yaml import load_documents

__all__ = ["KINDS", "ApiObject", "parse", "parse_all", "unknown_fields"]

ApiObject = (
    TrainJob
    | TrainJobList
    | TrainingRuntime
    | TrainingRuntimeList
    | ClusterTrainingRuntime
    | ClusterTrainingRuntimeList
    | JobSet
    | JobSetList
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
}
"""Each kind this package knows, with its apiVersion and model."""


def parse(doc: str | Mapping[str, Any], strict: bool = True) -> ApiObject:
    """The typed object for one YAML document or dict.

    ``strict`` (for user input) also rejects fields the API does not have; lenient parsing
    (for objects read back from a cluster) keeps them. Raises ``ValidationError``.
    """
    if isinstance(doc, str):
        try:
            documents = load_documents(doc)
        except yaml.YAMLError as error:
            raise ValidationError([FieldError("", f"invalid YAML: {error}")]) from error
        if len(documents) != 1:
            raise ValidationError(
                [FieldError("", f"expected one YAML document, got {len(documents)}")]
            )
        doc = documents[0]
    return _parse_object(doc, strict)


def parse_all(text: str, strict: bool = True) -> list[ApiObject]:
    """The typed objects of a multi-document YAML stream, in order."""
    try:
        documents = load_documents(text)
    except yaml.YAMLError as error:
        raise ValidationError([FieldError("", f"invalid YAML: {error}")]) from error
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
        raise ValidationError(
            [
                FieldError(
                    "", f"expected a mapping with apiVersion and kind, got {type(doc).__name__}"
                )
            ]
        )
    model = _model_for(doc)
    try:
        parsed = model.model_validate(dict(doc))
    except pydantic.ValidationError as error:
        raise ValidationError(
            [
                FieldError(format_path(_wire_loc(item["loc"])), _describe(item))
                for item in error.errors(include_url=False)
            ]
        ) from None
    if strict:
        errors = [FieldError(path, message) for path, message in unknown_fields(parsed)]
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


def _describe(item: Mapping[str, Any]) -> str:
    message = str(item["msg"])
    if item["type"] == "missing":
        return "required field is missing"
    value = item.get("input")
    if isinstance(value, (str, int, float, bool)) or value is None:
        return f"{message} (got {value!r})"
    return f"{message} (got {type(value).__name__})"


def unknown_fields(model: ApiModel) -> list[tuple[str, str]]:
    """``(path, message)`` for every field the API does not define, anywhere in ``model``."""
    return list(_walk_unknown(model, ()))


def _walk_unknown(value: object, path: tuple[str | int, ...]) -> Iterator[tuple[str, str]]:
    if isinstance(value, ApiModel):
        fields = type(value).model_fields
        known = [info.alias or name for name, info in fields.items()]
        for name in value.model_extra or {}:
            hint = difflib.get_close_matches(name, known, n=1)
            suggestion = f'; did you mean "{hint[0]}"?' if hint else ""
            yield format_path((*path, name)), f'unknown field "{name}"{suggestion}'
        for name, info in fields.items():
            yield from _walk_unknown(getattr(value, name), (*path, info.alias or name))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _walk_unknown(item, (*path, index))
