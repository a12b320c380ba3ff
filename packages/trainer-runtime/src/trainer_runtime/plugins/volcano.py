"""Volcano: a Volcano PodGroup with queue, priority class and network topology."""

from __future__ import annotations

from typing import Any, Final

from trainer_api import TrainJob

from trainer_runtime.info import RuntimeInfo
from trainer_runtime.plan import Observed
from trainer_runtime.plugins._pod_groups import pod_group

__all__ = ["Volcano"]

GROUP_NAME_ANNOTATION: Final = "scheduling.k8s.io/group-name"
QUEUE_ANNOTATION: Final = "scheduling.volcano.sh/queue-name"
API_VERSION: Final = "scheduling.volcano.sh/v1beta1"


class Volcano:
    """Applies ``podGroupPolicy.volcano``.

    Queue: the TrainJob's (or the patched JobSet template's) ``scheduling.volcano.sh/queue-name``
    annotation. Priority class: the trainer pod template's ``priorityClassName``.
    """

    name = "Volcano"

    def enforce_pod_group_policy(self, info: RuntimeInfo, job: TrainJob) -> None:
        """Annotate every pod with the PodGroup's name."""
        if info.pod_group_policy is None or info.pod_group_policy.volcano is None:
            return
        info.scheduler.pod_annotations[GROUP_NAME_ANNOTATION] = info.job_name

    def build(self, info: RuntimeInfo, job: TrainJob, observed: Observed) -> list[dict[str, Any]]:
        """The PodGroup."""
        policy = info.pod_group_policy.volcano if info.pod_group_policy else None
        if policy is None:
            return []
        spec: dict[str, Any] = {}
        annotations = {
            **(info.metadata.get("annotations") or {}),
            **(job.metadata.annotations or {}),
        }
        if annotations.get(QUEUE_ANNOTATION):
            spec["queue"] = annotations[QUEUE_ANNOTATION]
        trainer = info.trainer_pod_set()
        priority_class = trainer.pod_spec.get("priorityClassName") if trainer else None
        if priority_class:
            spec["priorityClassName"] = priority_class
        topology = policy.network_topology
        if topology is not None:
            spec["networkTopology"] = {
                "mode": topology.mode if "mode" in topology.model_fields_set else "hard",
                "highestTierAllowed": (
                    topology.highest_tier_allowed
                    if "highest_tier_allowed" in topology.model_fields_set
                    else 1
                ),
            }
        return [pod_group(API_VERSION, info, job, **spec)]
