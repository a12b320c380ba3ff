"""The public surface of a Trainer SDK package, as JSON: names, signatures, dataclass fields.

Generate upstream's (in a throwaway environment with ``pip install kubeflow==0.5.0``; never in
the shared one) and check it in as data::

    python packages/trainer-sdk/tools/sdk_surface.py kubeflow.trainer \\
        > packages/trainer-sdk/tests/data/kubeflow_0.5.0_surface.json
    python packages/trainer-sdk/tools/sdk_surface.py kubeflow.optimizer optimizer \\
        > packages/trainer-sdk/tests/data/kubeflow_0.5.0_optimizer_surface.json

``tests/test_upstream_surface.py`` describes ``trainer_sdk`` with the same function and compares
the two with ``differences``. Only the standard library is used, so the script runs anywhere.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import inspect
import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any

# Upstream's modules that its docs and examples import from, relative to the package.
MODULES = (
    "",
    "api.trainer_client",
    "types.types",
    "constants.constants",
    "options",
    "backends.localprocess.backend",
    "backends.localprocess.types",
    "backends.container.types",
    "backends.kubernetes.utils",
)
# The same for the optimizer client (``kubeflow.optimizer``; ours is ``trainer_sdk.optimizer``).
OPTIMIZER_MODULES = (
    "",
    "api.optimizer_client",
    "types.algorithm_types",
    "types.optimization_types",
    "types.search_types",
    "constants.constants",
)
MODULE_SETS = {"trainer": MODULES, "optimizer": OPTIMIZER_MODULES}
_SIMPLE = (type(None), bool, int, float, str)


def _value(value: Any) -> Any:
    """A JSON-comparable form of a default or constant: literals as themselves, else a type."""
    if isinstance(value, _SIMPLE):
        return value
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [_value(item) for item in value]
        return sorted(items, key=repr) if isinstance(value, (set, frozenset)) else items
    if isinstance(value, Mapping):
        return {str(key): _value(item) for key, item in value.items()}
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    return f"<{type(value).__name__}>"


def _signature(function: Any) -> list[list[Any]]:
    """[name, kind, required, default] for each parameter."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return []
    return [
        [
            parameter.name,
            parameter.kind.name,
            parameter.default is inspect.Parameter.empty,
            None if parameter.default is inspect.Parameter.empty else _value(parameter.default),
        ]
        for parameter in parameters
    ]


def _methods(cls: type) -> dict[str, Any]:
    """Public methods and properties a class defines or inherits (not from builtins)."""
    found: dict[str, Any] = {}
    for name in sorted(dir(cls)):
        if name.startswith("_") and name not in ("__init__", "__call__", "__getitem__"):
            continue
        attribute = inspect.getattr_static(cls, name)
        owner = next((base for base in cls.__mro__ if name in vars(base)), object)
        if owner.__module__ in ("builtins", "abc", "enum") or owner.__module__.startswith(
            "pydantic"
        ):
            continue
        if isinstance(attribute, property):
            found[name] = "property"
        elif isinstance(attribute, (staticmethod, classmethod)) or inspect.isfunction(attribute):
            found[name] = _signature(getattr(cls, name))
    return found


def _required(field: dataclasses.Field[Any]) -> bool:
    return field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING


def describe_object(value: Any) -> dict[str, Any]:
    """What kind of public object ``value`` is, with what callers depend on."""
    if inspect.isclass(value):
        if issubclass(value, enum.Enum):
            return {"kind": "enum", "members": {m.name: _value(m.value) for m in value}}
        if dataclasses.is_dataclass(value):
            fields = [
                [item.name, _required(item)]
                for item in dataclasses.fields(value)
                if item.init and not item.name.startswith("_")
            ]
            return {"kind": "dataclass", "fields": fields, "methods": _methods(value)}
        model_fields = getattr(value, "model_fields", None)
        if isinstance(model_fields, Mapping):
            return {
                "kind": "model",
                "fields": {
                    name: [info.is_required(), _value(info.get_default(call_default_factory=True))]
                    for name, info in model_fields.items()
                },
            }
        return {"kind": "class", "methods": _methods(value)}
    if callable(value):
        return {"kind": "function", "signature": _signature(value)}
    return {"kind": "value", "value": _value(value)}


def _public_names(module: Any) -> list[str]:
    """``__all__``, else what the module itself defines: its classes, functions and constants."""
    if hasattr(module, "__all__"):
        return sorted(module.__all__)
    names = []
    for name, value in vars(module).items():
        if name.startswith("_") or name == "TYPE_CHECKING" or inspect.ismodule(value):
            continue
        defined_here = getattr(value, "__module__", module.__name__) == module.__name__
        definition = (inspect.isclass(value) or inspect.isfunction(value)) and defined_here
        if definition or name.isupper():
            names.append(name)
    return sorted(names)


def describe(package: str, modules: Sequence[str] = MODULES) -> dict[str, Any]:
    """Every public name of ``modules`` under ``package``, keyed ``module.path.Name``."""
    surface: dict[str, Any] = {}
    for relative in modules:
        module = importlib.import_module(f"{package}.{relative}" if relative else package)
        for name in _public_names(module):
            key = f"{relative}.{name}" if relative else name
            surface[key] = describe_object(getattr(module, name))
    return surface


def _compatible_signature(theirs: list[list[Any]], ours: list[list[Any]]) -> str | None:
    """Why ``ours`` cannot take every call ``theirs`` takes, or None."""
    if not theirs:
        return None
    for index, (name, kind, required, default) in enumerate(theirs):
        match = next((item for item in ours if item[0] == name), None)
        if match is None:
            return f"parameter {name!r} missing"
        if kind != "KEYWORD_ONLY" and ours.index(match) != index:
            return f"parameter {name!r} at position {ours.index(match)}, upstream {index}"
        if match[2] and not required:
            return f"parameter {name!r} required, upstream has a default"
        if not required and match[3] != default:
            return f"parameter {name!r} defaults to {match[3]!r}, upstream {default!r}"
    names = {item[0] for item in theirs}
    extra = [item[0] for item in ours if item[0] not in names and item[2]]
    return f"extra required parameters {extra}" if extra else None


def _compatible_fields(theirs: list[list[Any]], ours: list[list[Any]]) -> str | None:
    if [name for name, _ in ours[: len(theirs)]] != [name for name, _ in theirs]:
        return f"fields {[n for n, _ in ours]}, upstream starts {[n for n, _ in theirs]}"
    for (name, required), (_, our_required) in zip(theirs, ours, strict=False):
        if required != our_required:
            return f"field {name!r} {'required' if our_required else 'optional'}, upstream not"
    extra = [name for name, required in ours[len(theirs) :] if required]
    return f"extra required fields {extra}" if extra else None


def _compatible_methods(theirs: dict[str, Any], ours: dict[str, Any]) -> list[str]:
    problems = []
    for name, signature in theirs.items():
        if name not in ours:
            problems.append(f"method {name!r} missing")
        elif signature == "property" or ours[name] == "property":
            if signature != ours[name]:
                problems.append(f"{name!r}: property on one side only")
        elif (why := _compatible_signature(signature, ours[name])) is not None:
            problems.append(f"{name}(): {why}")
    return problems


def _compare(theirs: dict[str, Any], ours: dict[str, Any]) -> list[str]:
    """Why ``ours`` does not stand in for ``theirs``; empty when it does."""
    if theirs["kind"] != ours["kind"]:
        return [f"a {ours['kind']}, upstream a {theirs['kind']}"]
    kind = theirs["kind"]
    if kind == "enum":
        missing = {k: v for k, v in theirs["members"].items() if ours["members"].get(k) != v}
        return [f"members {missing} missing or different"] if missing else []
    if kind == "dataclass":
        fields = _compatible_fields(theirs["fields"], ours["fields"])
        return ([fields] if fields else []) + _compatible_methods(
            theirs["methods"], ours["methods"]
        )
    if kind == "model":
        problems = [
            f"field {name!r} is {ours['fields'].get(name)}, upstream {spec}"
            for name, spec in theirs["fields"].items()
            if ours["fields"].get(name) != spec
        ]
        extra = [n for n, (required, _) in ours["fields"].items() if required and n not in theirs]
        return problems + ([f"extra required fields {extra}"] if extra else [])
    if kind == "class":
        return _compatible_methods(theirs["methods"], ours["methods"])
    if kind == "function":
        why = _compatible_signature(theirs["signature"], ours["signature"])
        return [why] if why else []
    return [] if theirs == ours else [f"value {ours['value']!r}, upstream {theirs['value']!r}"]


def differences(upstream: dict[str, Any], ours: dict[str, Any]) -> dict[str, list[str]]:
    """Each upstream name that ours lacks or that ours would not take the same calls for."""
    found: dict[str, list[str]] = {}
    for key, theirs in upstream.items():
        if key not in ours:
            found[key] = ["missing"]
        elif problems := _compare(theirs, ours[key]):
            found[key] = problems
    return found


if __name__ == "__main__":
    modules = MODULE_SETS[sys.argv[2] if len(sys.argv) > 2 else "trainer"]
    json.dump(describe(sys.argv[1], modules), sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
