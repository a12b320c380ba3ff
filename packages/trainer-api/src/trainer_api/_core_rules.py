"""Defaults and list semantics of the Kubernetes core types, as the upstream CRDs declare them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from trainer_api._base import ApiModel
from trainer_api._batch import (
    JobSuccessPolicy,
    PodFailurePolicy,
    PodFailurePolicyOnExitCodesRequirement,
    PodFailurePolicyRule,
)
from trainer_api._containers import (
    Capabilities,
    Container,
    ContainerPort,
    ContainerRestartRuleOnExitCodes,
    ExecAction,
    GRPCAction,
    HTTPGetAction,
    ResourceRequirements,
)
from trainer_api._env import (
    ConfigMapEnvSource,
    ConfigMapKeySelector,
    FileKeySelector,
    LocalObjectReference,
    SecretEnvSource,
    SecretKeySelector,
)
from trainer_api._fieldspec import ATOMIC, SET, FieldSpec, list_map, named_map
from trainer_api._meta import (
    LabelSelector,
    LabelSelectorRequirement,
)
from trainer_api._pods import (
    HostAlias,
    PodDNSConfig,
    PodSecurityContext,
    PodSpec,
)
from trainer_api._scheduling import (
    NodeAffinity,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PodAffinity,
    PodAffinityTerm,
    PodAntiAffinity,
    TopologySpreadConstraint,
)
from trainer_api._volumes import (
    AzureDiskVolumeSource,
    CephFSVolumeSource,
    ConfigMapProjection,
    ConfigMapVolumeSource,
    DownwardAPIProjection,
    DownwardAPIVolumeSource,
    FCVolumeSource,
    ISCSIVolumeSource,
    PersistentVolumeClaimSpec,
    PersistentVolumeClaimStatus,
    ProjectedVolumeSource,
    RBDVolumeSource,
    ScaleIOVolumeSource,
    SecretProjection,
    SecretVolumeSource,
)

__all__ = ["CORE_FIELD_SPECS"]

CORE_FIELD_SPECS: Final[Mapping[type[ApiModel], Mapping[str, FieldSpec]]] = {
    LocalObjectReference: {"name": FieldSpec(default="")},
    ConfigMapKeySelector: {"name": FieldSpec(default="")},
    SecretKeySelector: {"name": FieldSpec(default="")},
    FileKeySelector: {"optional": FieldSpec(default=False)},
    ContainerPort: {"protocol": FieldSpec(default="TCP")},
    ConfigMapEnvSource: {"name": FieldSpec(default="")},
    SecretEnvSource: {"name": FieldSpec(default="")},
    ConfigMapVolumeSource: {"name": FieldSpec(default=""), "items": ATOMIC},
    ConfigMapProjection: {"name": FieldSpec(default=""), "items": ATOMIC},
    SecretProjection: {"name": FieldSpec(default=""), "items": ATOMIC},
    SecretVolumeSource: {"items": ATOMIC},
    DownwardAPIVolumeSource: {"items": ATOMIC},
    DownwardAPIProjection: {"items": ATOMIC},
    ProjectedVolumeSource: {"sources": ATOMIC},
    CephFSVolumeSource: {"monitors": ATOMIC},
    FCVolumeSource: {"target_wwns": ATOMIC, "wwids": ATOMIC},
    PersistentVolumeClaimSpec: {"access_modes": ATOMIC},
    PersistentVolumeClaimStatus: {"access_modes": ATOMIC, "conditions": list_map("type")},
    Capabilities: {"add": ATOMIC, "drop": ATOMIC},
    ExecAction: {"command": ATOMIC},
    HTTPGetAction: {"http_headers": ATOMIC},
    ContainerRestartRuleOnExitCodes: {"values": SET},
    ResourceRequirements: {"claims": list_map("name")},
    PodSecurityContext: {"supplemental_groups": ATOMIC, "sysctls": ATOMIC},
    PodDNSConfig: {"nameservers": ATOMIC, "options": ATOMIC, "searches": ATOMIC},
    HostAlias: {"hostnames": ATOMIC},
    LabelSelector: {"match_expressions": ATOMIC},
    LabelSelectorRequirement: {"values": ATOMIC},
    NodeSelector: {"node_selector_terms": ATOMIC},
    NodeSelectorRequirement: {"values": ATOMIC},
    NodeSelectorTerm: {"match_expressions": ATOMIC, "match_fields": ATOMIC},
    NodeAffinity: {"preferred_during_scheduling_ignored_during_execution": ATOMIC},
    PodAffinity: {
        "required_during_scheduling_ignored_during_execution": ATOMIC,
        "preferred_during_scheduling_ignored_during_execution": ATOMIC,
    },
    PodAntiAffinity: {
        "required_during_scheduling_ignored_during_execution": ATOMIC,
        "preferred_during_scheduling_ignored_during_execution": ATOMIC,
    },
    PodAffinityTerm: {
        "match_label_keys": ATOMIC,
        "mismatch_label_keys": ATOMIC,
        "namespaces": ATOMIC,
    },
    TopologySpreadConstraint: {"match_label_keys": ATOMIC},
    PodFailurePolicy: {"rules": ATOMIC},
    PodFailurePolicyRule: {"on_pod_conditions": ATOMIC},
    PodFailurePolicyOnExitCodesRequirement: {"values": SET},
    JobSuccessPolicy: {"rules": ATOMIC},
    GRPCAction: {"service": FieldSpec(default="")},
    AzureDiskVolumeSource: {
        "fs_type": FieldSpec(default="ext4"),
        "read_only": FieldSpec(default=False),
    },
    ISCSIVolumeSource: {"iscsi_interface": FieldSpec(default="default"), "portals": ATOMIC},
    RBDVolumeSource: {
        "keyring": FieldSpec(default="/etc/ceph/keyring"),
        "pool": FieldSpec(default="rbd"),
        "user": FieldSpec(default="admin"),
        "monitors": ATOMIC,
    },
    ScaleIOVolumeSource: {
        "fs_type": FieldSpec(default="xfs"),
        "storage_mode": FieldSpec(default="ThinProvisioned"),
    },
    PodSpec: {
        "containers": named_map(),
        "init_containers": named_map(),
        "ephemeral_containers": named_map(),
        "volumes": named_map(),
        "image_pull_secrets": named_map(),
        "scheduling_gates": named_map(),
        "resource_claims": named_map(),
        "host_aliases": list_map("ip"),
        "topology_spread_constraints": list_map("topologyKey", "whenUnsatisfiable"),
        "readiness_gates": ATOMIC,
        "tolerations": ATOMIC,
    },
    Container: {
        "command": ATOMIC,
        "args": ATOMIC,
        "env": named_map(),
        "env_from": ATOMIC,
        "ports": list_map("containerPort", "protocol"),
        "resize_policy": ATOMIC,
        "restart_policy_rules": ATOMIC,
        "volume_mounts": list_map("mountPath"),
        "volume_devices": list_map("devicePath"),
    },
}
"""Constraints of the core types' fields, by model and attribute name."""
