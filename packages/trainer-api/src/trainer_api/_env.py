"""core/v1 references and environment variables."""

from __future__ import annotations

from trainer_api._base import ApiModel
from trainer_api._types import QuantityValue

__all__ = [
    "ConfigMapEnvSource",
    "ConfigMapKeySelector",
    "EnvFromSource",
    "EnvVar",
    "EnvVarSource",
    "FileKeySelector",
    "LocalObjectReference",
    "ObjectFieldSelector",
    "ResourceFieldSelector",
    "SecretEnvSource",
    "SecretKeySelector",
]


class LocalObjectReference(ApiModel):
    """A Secret or ConfigMap in the same namespace, by name."""

    name: str | None = None


class ObjectFieldSelector(ApiModel):
    """A downward-API field of the pod, such as ``metadata.name``."""

    field_path: str
    api_version: str | None = None


class ResourceFieldSelector(ApiModel):
    """A resource limit or request of a container, such as ``limits.cpu``."""

    resource: str
    container_name: str | None = None
    divisor: QuantityValue | None = None


class ConfigMapKeySelector(ApiModel):
    """A key of a ConfigMap."""

    key: str
    name: str | None = None
    optional: bool | None = None


class SecretKeySelector(ApiModel):
    """A key of a Secret."""

    key: str
    name: str | None = None
    optional: bool | None = None


class FileKeySelector(ApiModel):
    """A key of an env file in a volume."""

    key: str
    path: str
    volume_name: str
    optional: bool | None = None


class EnvVarSource(ApiModel):
    """Where an environment variable's value comes from."""

    field_ref: ObjectFieldSelector | None = None
    resource_field_ref: ResourceFieldSelector | None = None
    config_map_key_ref: ConfigMapKeySelector | None = None
    secret_key_ref: SecretKeySelector | None = None
    file_key_ref: FileKeySelector | None = None


class EnvVar(ApiModel):
    """An environment variable of a container."""

    name: str
    value: str | None = None
    value_from: EnvVarSource | None = None


class ConfigMapEnvSource(ApiModel):
    """A ConfigMap whose keys become environment variables."""

    name: str | None = None
    optional: bool | None = None


class SecretEnvSource(ApiModel):
    """A Secret whose keys become environment variables."""

    name: str | None = None
    optional: bool | None = None


class EnvFromSource(ApiModel):
    """A source of environment variables."""

    prefix: str | None = None
    config_map_ref: ConfigMapEnvSource | None = None
    secret_ref: SecretEnvSource | None = None
