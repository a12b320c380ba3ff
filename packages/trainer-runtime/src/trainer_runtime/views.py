"""Typed views of the pod-template parts plugins edit in place: TypedDicts of the wire form.

The JobSet being rendered stays a manifest dict (strategic merges make it, and it is written out
as one), so plugins edit its pod templates as dicts; these views give those dicts the keys of
the ``trainer_api`` models (``Container``, ``EnvVar``, ``PodSpec``, ...) under their wire names,
so a misspelled key (``container["resouces"]``) is a type error and reading a key gives its
type. The values are the plain dicts themselves: no copy, no conversion.
``tests/test_views.py`` checks every key against the model's field aliases.

Only the fields plugins touch are listed; the rest of each object passes through unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypedDict, cast

__all__ = [
    "ContainerDoc",
    "ContainerPortDoc",
    "EnvVarDoc",
    "PodSpecDoc",
    "ResourcesDoc",
    "VolumeDoc",
    "VolumeMountDoc",
    "env_docs",
]


class EnvVarDoc(TypedDict, total=False):
    """``trainer_api.EnvVar`` on the wire."""

    name: str
    value: str
    valueFrom: dict[str, Any]


class ContainerPortDoc(TypedDict, total=False):
    """``trainer_api.ContainerPort`` on the wire."""

    containerPort: int
    name: str
    protocol: str


class ResourcesDoc(TypedDict, total=False):
    """``trainer_api.ResourceRequirements`` on the wire (quantities as written)."""

    limits: dict[str, Any]
    requests: dict[str, Any]


class VolumeMountDoc(TypedDict, total=False):
    """``trainer_api.VolumeMount`` on the wire."""

    name: str
    mountPath: str
    readOnly: bool
    subPath: str


class ContainerDoc(TypedDict, total=False):
    """``trainer_api.Container`` on the wire."""

    name: str
    image: str
    command: list[str]
    args: list[str]
    env: list[EnvVarDoc]
    envFrom: list[dict[str, Any]]
    ports: list[ContainerPortDoc]
    resources: ResourcesDoc
    volumeMounts: list[VolumeMountDoc]


class VolumeDoc(TypedDict, total=False):
    """``trainer_api.Volume`` on the wire (the sources plugins create)."""

    name: str
    emptyDir: dict[str, Any]
    secret: dict[str, Any]
    configMap: dict[str, Any]
    projected: dict[str, Any]
    persistentVolumeClaim: dict[str, Any]


class PodSpecDoc(TypedDict, total=False):
    """``trainer_api.PodSpec`` on the wire."""

    containers: list[ContainerDoc]
    initContainers: list[ContainerDoc]
    volumes: list[VolumeDoc]
    overhead: dict[str, Any]
    priorityClassName: str
    serviceAccountName: str
    restartPolicy: str


def env_docs(env: Iterable[Mapping[str, Any]]) -> list[EnvVarDoc]:
    """Env var dicts from elsewhere (``EnvVar.to_dict()``, a sibling package) as EnvVarDocs;
    TypeError naming the key when one has a key an EnvVar does not."""
    docs = []
    for var in env:
        unknown = set(var) - set(EnvVarDoc.__annotations__)
        if unknown:
            raise TypeError(f"env var {var.get('name')!r}: unknown keys {sorted(unknown)}")
        docs.append(cast(EnvVarDoc, dict(var)))
    return docs
