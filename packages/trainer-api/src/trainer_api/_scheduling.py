"""core/v1 scheduling constraints: affinity, tolerations, topology spread."""

from __future__ import annotations

from trainer_api._base import ApiModel
from trainer_api._meta import LabelSelector
from trainer_api._types import Int32, Int64

__all__ = [
    "Affinity",
    "NodeAffinity",
    "NodeSelector",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "PodAffinity",
    "PodAffinityTerm",
    "PodAntiAffinity",
    "PreferredSchedulingTerm",
    "Toleration",
    "TopologySpreadConstraint",
    "WeightedPodAffinityTerm",
]


class NodeSelectorRequirement(ApiModel):
    """A node label or field compared with values."""

    key: str
    operator: str
    values: list[str] | None = None


class NodeSelectorTerm(ApiModel):
    """Requirements a node must all meet."""

    match_expressions: list[NodeSelectorRequirement] | None = None
    match_fields: list[NodeSelectorRequirement] | None = None


class NodeSelector(ApiModel):
    """Terms of which a node must meet at least one."""

    node_selector_terms: list[NodeSelectorTerm]


class PreferredSchedulingTerm(ApiModel):
    """A weighted node preference."""

    weight: Int32
    preference: NodeSelectorTerm


class NodeAffinity(ApiModel):
    """Which nodes a pod must or should run on."""

    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] | None = (
        None
    )


class PodAffinityTerm(ApiModel):
    """Pods, by label and namespace, that a pod must (not) share a topology domain with."""

    topology_key: str
    label_selector: LabelSelector | None = None
    namespace_selector: LabelSelector | None = None
    namespaces: list[str] | None = None
    match_label_keys: list[str] | None = None
    mismatch_label_keys: list[str] | None = None


class WeightedPodAffinityTerm(ApiModel):
    """A weighted pod affinity preference."""

    weight: Int32
    pod_affinity_term: PodAffinityTerm


class PodAffinity(ApiModel):
    """Pods a pod must or should run near."""

    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] | None = None
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] | None = (
        None
    )


class PodAntiAffinity(ApiModel):
    """Pods a pod must or should run away from."""

    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] | None = None
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] | None = (
        None
    )


class Affinity(ApiModel):
    """Node affinity, pod affinity and pod anti-affinity."""

    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAntiAffinity | None = None


class Toleration(ApiModel):
    """A taint the pod tolerates."""

    key: str | None = None
    operator: str | None = None
    value: str | None = None
    effect: str | None = None
    toleration_seconds: Int64 | None = None


class TopologySpreadConstraint(ApiModel):
    """How evenly matching pods spread over a topology."""

    max_skew: Int32
    topology_key: str
    when_unsatisfiable: str
    label_selector: LabelSelector | None = None
    min_domains: Int32 | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: list[str] | None = None
