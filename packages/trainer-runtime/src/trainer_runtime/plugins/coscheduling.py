"""Coscheduling: a scheduler-plugins PodGroup so that all of a job's pods start together."""

from __future__ import annotations

from typing import Any, Final

from trainer_api import TrainJob

from trainer_runtime.info import RuntimeInfo
from trainer_runtime.plan import Observed
from trainer_runtime.plugins._pod_groups import pod_group

__all__ = ["Coscheduling"]

POD_GROUP_LABEL: Final = "scheduling.x-k8s.io/pod-group"
API_VERSION: Final = "scheduling.x-k8s.io/v1alpha1"
DEFAULT_SCHEDULE_TIMEOUT_SECONDS: Final = 60


class Coscheduling:
    """Applies ``podGroupPolicy.coscheduling``."""

    name = "Coscheduling"

    def enforce_pod_group_policy(self, info: RuntimeInfo, job: TrainJob) -> None:
        """Label every pod with the PodGroup's name."""
        if info.pod_group_policy is None or info.pod_group_policy.coscheduling is None:
            return
        info.scheduler.pod_labels[POD_GROUP_LABEL] = info.job_name

    def build(self, info: RuntimeInfo, job: TrainJob, observed: Observed) -> list[dict[str, Any]]:
        """The PodGroup: every pod of every replicated job, their summed requests, the timeout."""
        policy = info.pod_group_policy.coscheduling if info.pod_group_policy else None
        if policy is None:
            return []
        timeout = policy.schedule_timeout_seconds or DEFAULT_SCHEDULE_TIMEOUT_SECONDS
        return [pod_group(API_VERSION, info, job, scheduleTimeoutSeconds=timeout)]
