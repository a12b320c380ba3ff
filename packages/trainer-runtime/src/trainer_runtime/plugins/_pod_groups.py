"""What both pod-group plugins build: a PodGroup for every pod of the job and their requests."""

from __future__ import annotations

from typing import Any

from trainer_api import TrainJob

from trainer_runtime import manifests, resources
from trainer_runtime.info import RuntimeInfo

__all__ = ["pod_group"]


def pod_group(api_version: str, info: RuntimeInfo, job: TrainJob, **extra: Any) -> dict[str, Any]:
    """A PodGroup named like the job: ``minMember`` counts every pod (initializers, launcher,
    nodes), ``minResources`` sums every pod's requests; ``extra`` adds scheduler fields."""
    spec: dict[str, Any] = {"minMember": sum(ps.replicas * ps.count for ps in info.pod_sets)}
    requests = resources.add_requests(
        resources.scale_requests(pod_set.requests(), pod_set.replicas * pod_set.count)
        for pod_set in info.pod_sets
    )
    if requests:
        spec["minResources"] = requests
    spec.update(extra)
    return {
        "apiVersion": api_version,
        "kind": "PodGroup",
        "metadata": manifests.owned_metadata(job, info.job_name),
        "spec": spec,
    }
