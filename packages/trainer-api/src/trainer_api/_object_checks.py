"""What the API server refuses in any object although no schema states it.

Object metadata (apimachinery's ``ValidateObjectMeta``): a namespace is a DNS-1123 label,
label keys and annotation keys are qualified names, label values are at most 63 characters
of ``[A-Za-z0-9_.-]`` starting and ending alphanumeric. Environment variables (core
validation, with ``RelaxedEnvironmentVariableValidation`` as Kubernetes 1.32+ has it by
default): a name is one or more printable ASCII characters other than ``=``; a value may not
hold NUL, which no process environment can carry. Volumes (core validation of the pods a
template becomes): a volume's name is a DNS-1123 label, a ``hostPath`` has no ``..``; a volume
mount has a ``mountPath``, and its ``subPath``/``subPathExpr`` is relative without ``..``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Final, TypeGuard

from trainer_api._base import ApiModel
from trainer_api._containers import VolumeMount
from trainer_api._env import EnvVar
from trainer_api._errors import FieldError, format_path
from trainer_api._meta import ObjectMeta
from trainer_api._volumes import Volume

__all__ = ["is_dns1123_label", "is_dns1123_subdomain", "object_errors"]

Path = tuple[str | int, ...]

DNS1123_LABEL: Final = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
DNS1123_SUBDOMAIN: Final = re.compile(
    r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
)
QUALIFIED_NAME_PART: Final = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
ENV_NAME: Final = re.compile(r"[\x20-\x3c\x3e-\x7e]+")  # printable ASCII except '='
ANNOTATIONS_MAX_BYTES: Final = 256 * 1024


def object_errors(obj: ApiModel) -> list[FieldError]:
    """Every metadata and env problem anywhere in ``obj``, with its field path."""
    return list(_walk(obj, ()))


def _walk(value: object, path: Path) -> Iterator[FieldError]:
    if isinstance(value, ObjectMeta):
        yield from _meta_errors(value, path)
    elif isinstance(value, EnvVar):
        yield from _env_errors(value, path)
    elif isinstance(value, Volume):
        yield from _volume_errors(value, path)
    elif isinstance(value, VolumeMount):
        yield from _volume_mount_errors(value, path)
    if isinstance(value, ApiModel):
        for name, info in type(value).model_fields.items():
            child = getattr(value, name)
            if isinstance(child, (ApiModel, list)):
                yield from _walk(child, (*path, info.alias or name))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _walk(item, (*path, index))


def _meta_errors(meta: ObjectMeta, path: Path) -> Iterator[FieldError]:
    if meta.namespace and not is_dns1123_label(meta.namespace):
        yield FieldError(
            format_path((*path, "namespace")),
            "a namespace must be a DNS-1123 label: at most 63 lowercase letters, digits and '-', "
            f"starting and ending alphanumeric (got {meta.namespace!r})",
        )
    for key, value in (meta.labels or {}).items():
        where = format_path((*path, "labels", key))
        if problem := _qualified_name_problem(key):
            yield FieldError(where, f"invalid label key {key!r}: {problem}")
        if value and not (len(value) <= 63 and QUALIFIED_NAME_PART.fullmatch(value)):
            yield FieldError(
                where,
                "a label value must be at most 63 characters of [A-Za-z0-9_.-], starting and "
                f"ending alphanumeric (got {value!r})",
            )
    annotations: Mapping[str, str] = meta.annotations or {}
    for key in annotations:
        if problem := _qualified_name_problem(key):
            yield FieldError(
                format_path((*path, "annotations", key)),
                f"invalid annotation key {key!r}: {problem}",
            )
    size = sum(len(key.encode()) + len(value.encode()) for key, value in annotations.items())
    if size > ANNOTATIONS_MAX_BYTES:
        yield FieldError(
            format_path((*path, "annotations")),
            f"may not be larger than {ANNOTATIONS_MAX_BYTES} bytes in total (got {size})",
        )


def _env_errors(env: EnvVar, path: Path) -> Iterator[FieldError]:
    if not ENV_NAME.fullmatch(env.name):
        yield FieldError(
            format_path((*path, "name")),
            "an environment variable name must be one or more printable ASCII characters "
            f"other than '=' (got {env.name!r})",
        )
    if env.value is not None and "\x00" in env.value:
        yield FieldError(format_path((*path, "value")), "may not contain NUL characters")


def _volume_errors(volume: Volume, path: Path) -> Iterator[FieldError]:
    if not is_dns1123_label(volume.name):
        yield FieldError(
            format_path((*path, "name")),
            "a volume name must be a DNS-1123 label: at most 63 lowercase letters, digits and "
            f"'-', starting and ending alphanumeric (got {volume.name!r})",
        )
    if volume.host_path is not None and _has_backsteps(volume.host_path.path):
        yield FieldError(
            format_path((*path, "hostPath", "path")),
            f"must not contain '..' (got {volume.host_path.path!r})",
        )


def _volume_mount_errors(mount: VolumeMount, path: Path) -> Iterator[FieldError]:
    if not mount.mount_path:
        yield FieldError(format_path((*path, "mountPath")), "may not be empty")
    for name, value in (("subPath", mount.sub_path), ("subPathExpr", mount.sub_path_expr)):
        if value and (value.startswith("/") or _has_backsteps(value)):
            yield FieldError(
                format_path((*path, name)),
                f"must be a relative path without '..' (got {value!r})",
            )


def _has_backsteps(path: str) -> bool:
    """Whether ``path`` has a ``..`` element (it could leave the directory it names a place in)."""
    return ".." in path.split("/")


def is_dns1123_label(value: object) -> TypeGuard[str]:
    """Whether ``value`` can name a namespace (or a TrainJob): a DNS-1123 label."""
    return isinstance(value, str) and len(value) <= 63 and bool(DNS1123_LABEL.fullmatch(value))


def is_dns1123_subdomain(value: object) -> TypeGuard[str]:
    """Whether ``value`` can name most Kubernetes objects: a DNS-1123 subdomain."""
    return isinstance(value, str) and len(value) <= 253 and bool(DNS1123_SUBDOMAIN.fullmatch(value))


def _qualified_name_problem(key: str) -> str | None:
    """Why ``key`` is not a qualified name (``[prefix/]name``), or None."""
    prefix, slash, name = key.rpartition("/")
    if slash and not is_dns1123_subdomain(prefix):
        return "the prefix must be a DNS-1123 subdomain (lowercase, at most 253 characters)"
    if not (0 < len(name) <= 63 and QUALIFIED_NAME_PART.fullmatch(name)):
        return (
            "the name must be 1-63 characters of [A-Za-z0-9_.-], starting and ending "
            "alphanumeric, with an optional DNS-1123 subdomain prefix and '/'"
        )
    return None
