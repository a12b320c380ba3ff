"""Defaulting as the upstream API server does it: the defaults the CRD schemas declare.

The defaults live in the rule table (``_rules.FIELD_SPECS``), so the generated CRDs
declare exactly the defaults ``apply_defaults`` fills in.
"""

from __future__ import annotations

import copy
from typing import Any, TypeVar

from pydantic import TypeAdapter

from trainer_api._base import ApiModel, KubernetesObject
from trainer_api._fieldspec import NO_DEFAULT
from trainer_api._rules import specs_for

__all__ = ["apply_defaults"]

T = TypeVar("T", bound=KubernetesObject)


def apply_defaults(obj: T) -> T:
    """A copy of ``obj`` with every unset field that has an upstream default filled in.

    As in the API server, a default applies only where its parent object is present.
    Fields set this way count as set, so ``to_dict()`` writes them.
    """
    copy = obj.model_copy(deep=True)
    _fill(copy)
    return copy


def _fill(value: object) -> None:
    if isinstance(value, ApiModel):
        specs = specs_for(type(value))
        for name in type(value).model_fields:
            current = getattr(value, name)
            spec = specs.get(name)
            if current is None and spec is not None and spec.default is not NO_DEFAULT:
                default = spec.default
                if isinstance(default, dict):  # an object default: as its model
                    annotation: Any = type(value).model_fields[name].annotation
                    default = TypeAdapter(annotation).validate_python(copy.deepcopy(default))
                setattr(value, name, default)
            else:
                _fill(current)
    elif isinstance(value, list):
        for item in value:
            _fill(item)
