"""Kubernetes core/v1 and batch/v1 types: typed where the platform reads or writes them.

Every field of the upstream types is declared, so a misspelt name is caught in strict mode;
deep structures the platform never looks into (probes, affinity terms, most volume sources)
are kept as plain JSON objects.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from trainer_api._base import ApiModel
from trainer_api._meta import LabelSelector, ObjectMeta

__all__ = [
    "Affinity",
    "ConfigMapKeySelector",
    "ConfigMapVolumeSource",
    "Container",
    "ContainerPort",
    "EmptyDirVolumeSource",
    "EnvFromSource",
    "EnvVar",
    "EnvVarSource",
    "FileKeySelector",
    "HostPathVolumeSource",
    "JobSpec",
    "JobTemplateSpec",
    "JsonObject",
    "LocalObjectReference",
    "ObjectFieldSelector",
    "PersistentVolumeClaimTemplate",
    "PersistentVolumeClaimVolumeSource",
    "PodSchedulingGate",
    "PodSpec",
    "PodTemplateSpec",
    "QuantityValue",
    "ResourceClaim",
    "ResourceFieldSelector",
    "ResourceRequirements",
    "SecretKeySelector",
    "SecretVolumeSource",
    "Toleration",
    "Volume",
    "VolumeMount",
]

JsonObject = dict[str, Any]
"""A JSON object kept as is (a structure the platform does not interpret)."""

QuantityValue = int | str
"""A resource quantity as written on the wire: an integer or a string such as ``"16Gi"``."""


class LocalObjectReference(ApiModel):
    """core/v1 LocalObjectReference (a Secret or ConfigMap in the same namespace)."""

    name: str | None = None


class PodSchedulingGate(ApiModel):
    """core/v1 PodSchedulingGate."""

    name: str


class ObjectFieldSelector(ApiModel):
    """core/v1 ObjectFieldSelector: a downward-API field such as ``metadata.name``."""

    field_path: str
    api_version: str | None = None


class ResourceFieldSelector(ApiModel):
    """core/v1 ResourceFieldSelector."""

    resource: str
    container_name: str | None = None
    divisor: QuantityValue | None = None


class ConfigMapKeySelector(ApiModel):
    """core/v1 ConfigMapKeySelector."""

    key: str
    name: str | None = None
    optional: bool | None = None


class SecretKeySelector(ApiModel):
    """core/v1 SecretKeySelector."""

    key: str
    name: str | None = None
    optional: bool | None = None


class FileKeySelector(ApiModel):
    """core/v1 FileKeySelector."""

    key: str
    path: str
    volume_name: str
    optional: bool | None = None


class EnvVarSource(ApiModel):
    """core/v1 EnvVarSource."""

    field_ref: ObjectFieldSelector | None = None
    resource_field_ref: ResourceFieldSelector | None = None
    config_map_key_ref: ConfigMapKeySelector | None = None
    secret_key_ref: SecretKeySelector | None = None
    file_key_ref: FileKeySelector | None = None


class EnvVar(ApiModel):
    """core/v1 EnvVar."""

    name: str
    value: str | None = None
    value_from: EnvVarSource | None = None


class EnvFromSource(ApiModel):
    """core/v1 EnvFromSource."""

    prefix: str | None = None
    config_map_ref: JsonObject | None = None
    secret_ref: JsonObject | None = None


class ContainerPort(ApiModel):
    """core/v1 ContainerPort."""

    container_port: int
    name: str | None = None
    protocol: str | None = None
    host_ip: str | None = Field(default=None, alias="hostIP")
    host_port: int | None = None


class ResourceClaim(ApiModel):
    """core/v1 ResourceClaim (a container's use of a pod resource claim)."""

    name: str
    request: str | None = None


class ResourceRequirements(ApiModel):
    """core/v1 ResourceRequirements; quantities are kept as written (see ``Quantity``)."""

    limits: dict[str, QuantityValue] | None = None
    requests: dict[str, QuantityValue] | None = None
    claims: list[ResourceClaim] | None = None


class VolumeMount(ApiModel):
    """core/v1 VolumeMount."""

    name: str
    mount_path: str
    read_only: bool | None = None
    recursive_read_only: str | None = None
    sub_path: str | None = None
    sub_path_expr: str | None = None
    mount_propagation: str | None = None


class Container(ApiModel):
    """core/v1 Container."""

    name: str
    image: str | None = None
    command: list[str] | None = None
    args: list[str] | None = None
    working_dir: str | None = None
    ports: list[ContainerPort] | None = None
    env_from: list[EnvFromSource] | None = None
    env: list[EnvVar] | None = None
    resources: ResourceRequirements | None = None
    resize_policy: list[JsonObject] | None = None
    restart_policy: str | None = None
    restart_policy_rules: list[JsonObject] | None = None
    volume_mounts: list[VolumeMount] | None = None
    volume_devices: list[JsonObject] | None = None
    liveness_probe: JsonObject | None = None
    readiness_probe: JsonObject | None = None
    startup_probe: JsonObject | None = None
    lifecycle: JsonObject | None = None
    termination_message_path: str | None = None
    termination_message_policy: str | None = None
    image_pull_policy: str | None = None
    security_context: JsonObject | None = None
    stdin: bool | None = None
    stdin_once: bool | None = None
    tty: bool | None = None


class EmptyDirVolumeSource(ApiModel):
    """core/v1 EmptyDirVolumeSource."""

    medium: str | None = None
    size_limit: QuantityValue | None = None


class HostPathVolumeSource(ApiModel):
    """core/v1 HostPathVolumeSource."""

    path: str
    type: str | None = None


class ConfigMapVolumeSource(ApiModel):
    """core/v1 ConfigMapVolumeSource."""

    name: str | None = None
    items: list[JsonObject] | None = None
    default_mode: int | None = None
    optional: bool | None = None


class SecretVolumeSource(ApiModel):
    """core/v1 SecretVolumeSource."""

    secret_name: str | None = None
    items: list[JsonObject] | None = None
    default_mode: int | None = None
    optional: bool | None = None


class PersistentVolumeClaimVolumeSource(ApiModel):
    """core/v1 PersistentVolumeClaimVolumeSource."""

    claim_name: str
    read_only: bool | None = None


class Volume(ApiModel):
    """core/v1 Volume: the common sources typed, the others kept as JSON objects."""

    name: str
    empty_dir: EmptyDirVolumeSource | None = None
    host_path: HostPathVolumeSource | None = None
    config_map: ConfigMapVolumeSource | None = None
    secret: SecretVolumeSource | None = None
    persistent_volume_claim: PersistentVolumeClaimVolumeSource | None = None
    projected: JsonObject | None = None
    downward_api: JsonObject | None = Field(default=None, alias="downwardAPI")
    ephemeral: JsonObject | None = None
    csi: JsonObject | None = None
    image: JsonObject | None = None
    nfs: JsonObject | None = None
    aws_elastic_block_store: JsonObject | None = None
    azure_disk: JsonObject | None = None
    azure_file: JsonObject | None = None
    cephfs: JsonObject | None = None
    cinder: JsonObject | None = None
    fc: JsonObject | None = None
    flex_volume: JsonObject | None = None
    flocker: JsonObject | None = None
    gce_persistent_disk: JsonObject | None = None
    git_repo: JsonObject | None = None
    glusterfs: JsonObject | None = None
    iscsi: JsonObject | None = None
    photon_persistent_disk: JsonObject | None = None
    portworx_volume: JsonObject | None = None
    quobyte: JsonObject | None = None
    rbd: JsonObject | None = None
    scale_io: JsonObject | None = Field(default=None, alias="scaleIO")
    storageos: JsonObject | None = None
    vsphere_volume: JsonObject | None = None


class Toleration(ApiModel):
    """core/v1 Toleration."""

    key: str | None = None
    operator: str | None = None
    value: str | None = None
    effect: str | None = None
    toleration_seconds: int | None = None


class Affinity(ApiModel):
    """core/v1 Affinity; the scheduling terms are kept as JSON objects."""

    node_affinity: JsonObject | None = None
    pod_affinity: JsonObject | None = None
    pod_anti_affinity: JsonObject | None = None


class PodSpec(ApiModel):
    """core/v1 PodSpec."""

    containers: list[Container]
    init_containers: list[Container] | None = None
    ephemeral_containers: list[JsonObject] | None = None
    volumes: list[Volume] | None = None
    restart_policy: str | None = None
    termination_grace_period_seconds: int | None = None
    active_deadline_seconds: int | None = None
    dns_policy: str | None = None
    dns_config: JsonObject | None = None
    node_selector: dict[str, str] | None = None
    node_name: str | None = None
    service_account_name: str | None = None
    service_account: str | None = None
    automount_service_account_token: bool | None = None
    host_network: bool | None = None
    host_pid: bool | None = Field(default=None, alias="hostPID")
    host_ipc: bool | None = Field(default=None, alias="hostIPC")
    host_users: bool | None = None
    share_process_namespace: bool | None = None
    security_context: JsonObject | None = None
    image_pull_secrets: list[LocalObjectReference] | None = None
    hostname: str | None = None
    hostname_override: str | None = None
    subdomain: str | None = None
    set_hostname_as_fqdn: bool | None = Field(default=None, alias="setHostnameAsFQDN")
    affinity: Affinity | None = None
    scheduler_name: str | None = None
    tolerations: list[Toleration] | None = None
    host_aliases: list[JsonObject] | None = None
    priority_class_name: str | None = None
    priority: int | None = None
    preemption_policy: str | None = None
    readiness_gates: list[JsonObject] | None = None
    runtime_class_name: str | None = None
    enable_service_links: bool | None = None
    overhead: dict[str, QuantityValue] | None = None
    topology_spread_constraints: list[JsonObject] | None = None
    os: JsonObject | None = None
    scheduling_gates: list[PodSchedulingGate] | None = None
    scheduling_group: JsonObject | None = None
    resource_claims: list[JsonObject] | None = None
    resources: ResourceRequirements | None = None


class PodTemplateSpec(ApiModel):
    """core/v1 PodTemplateSpec."""

    metadata: ObjectMeta | None = None
    spec: PodSpec | None = None


class JobSpec(ApiModel):
    """batch/v1 JobSpec."""

    template: PodTemplateSpec
    parallelism: int | None = None
    completions: int | None = None
    active_deadline_seconds: int | None = None
    pod_failure_policy: JsonObject | None = None
    success_policy: JsonObject | None = None
    backoff_limit: int | None = None
    backoff_limit_per_index: int | None = None
    max_failed_indexes: int | None = None
    selector: LabelSelector | None = None
    manual_selector: bool | None = None
    ttl_seconds_after_finished: int | None = None
    completion_mode: str | None = None
    suspend: bool | None = None
    pod_replacement_policy: str | None = None
    managed_by: str | None = None


class JobTemplateSpec(ApiModel):
    """batch/v1 JobTemplateSpec."""

    metadata: ObjectMeta | None = None
    spec: JobSpec | None = None


class PersistentVolumeClaimTemplate(ApiModel):
    """A core/v1 PersistentVolumeClaim used as a template (spec kept as a JSON object)."""

    api_version: str | None = None
    kind: str | None = None
    metadata: ObjectMeta | None = None
    spec: JsonObject | None = None
    status: JsonObject | None = None
