"""core/v1 PodSpec, PodTemplateSpec and the pod-level types they hold."""

from __future__ import annotations

from pydantic import Field

from trainer_api._base import ApiModel
from trainer_api._containers import (
    AppArmorProfile,
    Container,
    EphemeralContainer,
    ResourceRequirements,
    SeccompProfile,
    SELinuxOptions,
    WindowsSecurityContextOptions,
)
from trainer_api._env import LocalObjectReference
from trainer_api._meta import ObjectMeta
from trainer_api._scheduling import Affinity, Toleration, TopologySpreadConstraint
from trainer_api._types import Int32, Int64, QuantityValue
from trainer_api._volumes import Volume

__all__ = [
    "HostAlias",
    "PodDNSConfig",
    "PodDNSConfigOption",
    "PodOS",
    "PodReadinessGate",
    "PodResourceClaim",
    "PodSchedulingGate",
    "PodSchedulingGroup",
    "PodSecurityContext",
    "PodSpec",
    "PodTemplateSpec",
    "Sysctl",
]


class Sysctl(ApiModel):
    """A namespaced kernel parameter."""

    name: str
    value: str


class PodSecurityContext(ApiModel):
    """Security options of a pod."""

    app_armor_profile: AppArmorProfile | None = None
    fs_group: Int64 | None = None
    fs_group_change_policy: str | None = None
    run_as_group: Int64 | None = None
    run_as_non_root: bool | None = None
    run_as_user: Int64 | None = None
    se_linux_change_policy: str | None = Field(default=None, alias="seLinuxChangePolicy")
    se_linux_options: SELinuxOptions | None = Field(default=None, alias="seLinuxOptions")
    seccomp_profile: SeccompProfile | None = None
    supplemental_groups: list[Int64] | None = None
    supplemental_groups_policy: str | None = None
    sysctls: list[Sysctl] | None = None
    windows_options: WindowsSecurityContextOptions | None = None


class PodDNSConfigOption(ApiModel):
    """A resolver option."""

    name: str | None = None
    value: str | None = None


class PodDNSConfig(ApiModel):
    """DNS settings of a pod beyond its DNS policy."""

    nameservers: list[str] | None = None
    searches: list[str] | None = None
    options: list[PodDNSConfigOption] | None = None


class HostAlias(ApiModel):
    """An /etc/hosts entry."""

    ip: str
    hostnames: list[str] | None = None


class PodReadinessGate(ApiModel):
    """A pod condition that must be true for the pod to be ready."""

    condition_type: str


class PodResourceClaim(ApiModel):
    """A dynamic resource claim of a pod."""

    name: str
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


class PodSchedulingGate(ApiModel):
    """A gate that holds the pod back from scheduling while present."""

    name: str


class PodOS(ApiModel):
    """The operating system a pod runs on."""

    name: str


class PodSchedulingGroup(ApiModel):
    """The pod group a pod is scheduled with."""

    pod_group_name: str | None = None


class PodSpec(ApiModel):
    """core/v1 PodSpec."""

    containers: list[Container]
    init_containers: list[Container] | None = None
    ephemeral_containers: list[EphemeralContainer] | None = None
    volumes: list[Volume] | None = None
    restart_policy: str | None = None
    termination_grace_period_seconds: Int64 | None = None
    active_deadline_seconds: Int64 | None = None
    dns_policy: str | None = None
    dns_config: PodDNSConfig | None = None
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
    security_context: PodSecurityContext | None = None
    image_pull_secrets: list[LocalObjectReference] | None = None
    hostname: str | None = None
    hostname_override: str | None = None
    subdomain: str | None = None
    set_hostname_as_fqdn: bool | None = Field(default=None, alias="setHostnameAsFQDN")
    affinity: Affinity | None = None
    scheduler_name: str | None = None
    tolerations: list[Toleration] | None = None
    host_aliases: list[HostAlias] | None = None
    priority_class_name: str | None = None
    priority: Int32 | None = None
    preemption_policy: str | None = None
    readiness_gates: list[PodReadinessGate] | None = None
    runtime_class_name: str | None = None
    enable_service_links: bool | None = None
    overhead: dict[str, QuantityValue] | None = None
    topology_spread_constraints: list[TopologySpreadConstraint] | None = None
    os: PodOS | None = None
    scheduling_gates: list[PodSchedulingGate] | None = None
    scheduling_group: PodSchedulingGroup | None = None
    resource_claims: list[PodResourceClaim] | None = None
    resources: ResourceRequirements | None = None


class PodTemplateSpec(ApiModel):
    """core/v1 PodTemplateSpec."""

    metadata: ObjectMeta | None = None
    spec: PodSpec | None = None
