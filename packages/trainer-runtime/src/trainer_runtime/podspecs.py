"""In-place upserts on container and pod-spec dicts (the camelCase manifest form).

An upsert replaces the item with the same key where it stands, or appends it: so a plugin can
add its env after the user's, and building twice gives the same list.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from trainer_runtime.views import (
    ContainerDoc,
    ContainerPortDoc,
    EnvVarDoc,
    PodSpecDoc,
    VolumeDoc,
    VolumeMountDoc,
)

__all__ = [
    "env_value",
    "field_ref_env",
    "upsert_env",
    "upsert_init_container",
    "upsert_port",
    "upsert_volume",
    "upsert_volume_mount",
    "value_env",
]

_Item = TypeVar("_Item", bound=Mapping[str, object])


def _upsert(items: list[_Item], item: _Item, key: str) -> None:
    for position, existing in enumerate(items):
        if existing.get(key) == item[key]:
            items[position] = copy.copy(item)
            return
    items.append(copy.copy(item))


def upsert_env(container: ContainerDoc, env: Iterable[EnvVarDoc]) -> None:
    """Set each env var on ``container``, replacing a var of the same name where it stands."""
    items = container.setdefault("env", [])
    for var in env:
        _upsert(items, var, "name")


def upsert_init_container(pod_spec: PodSpecDoc, container: ContainerDoc) -> None:
    """Add an init container to the pod spec, replacing one of the same name where it stands."""
    _upsert(pod_spec.setdefault("initContainers", []), container, "name")


def upsert_port(container: ContainerDoc, port: int, protocol: str | None = None) -> None:
    """Declare ``port`` on ``container`` once."""
    item: ContainerPortDoc = {"containerPort": port}
    if protocol:
        item["protocol"] = protocol
    _upsert(container.setdefault("ports", []), item, "containerPort")


def upsert_volume(pod_spec: PodSpecDoc, volume: VolumeDoc) -> None:
    """Add ``volume`` to the pod spec, replacing a volume of the same name."""
    _upsert(pod_spec.setdefault("volumes", []), volume, "name")


def upsert_volume_mount(container: ContainerDoc, mount: VolumeMountDoc) -> None:
    """Mount a volume in ``container``, replacing a mount at the same path."""
    _upsert(container.setdefault("volumeMounts", []), mount, "mountPath")


def value_env(name: str, value: str) -> EnvVarDoc:
    """An env var with a literal value."""
    return {"name": name, "value": value}


def field_ref_env(name: str, field_path: str) -> EnvVarDoc:
    """An env var taken from a field of the pod (``metadata.annotations[...]``)."""
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": field_path}}}


def env_value(container: ContainerDoc, name: str) -> Any:
    """The value (or valueFrom) of env var ``name`` in ``container``; None when absent."""
    for var in container.get("env") or ():
        if var.get("name") == name:
            return var.get("value", var.get("valueFrom"))
    return None
