"""What both pod-group plugins compute: how many pods, and what they request together."""

from __future__ import annotations

from trainer_controller.runtime import resources
from trainer_controller.runtime.info import RuntimeInfo

__all__ = ["min_member", "min_resources"]


def min_member(info: RuntimeInfo) -> int:
    """Every pod of the job: initializers, launcher and nodes."""
    return sum(pod_set.replicas * pod_set.count for pod_set in info.pod_sets)


def min_resources(info: RuntimeInfo) -> dict[str, str]:
    """The sum over pods of each pod's requests."""
    return resources.add_requests(
        resources.scale_requests(
            resources.pod_requests(pod_set.pod_spec), pod_set.replicas * pod_set.count
        )
        for pod_set in info.pod_sets
    )
