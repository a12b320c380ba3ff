"""batch/v1 JobSpec and JobTemplateSpec, with pod failure and success policies."""

from __future__ import annotations

from trainer_api._base import ApiModel
from trainer_api._meta import LabelSelector, ObjectMeta
from trainer_api._pods import PodTemplateSpec
from trainer_api._types import Int32, Int64

__all__ = [
    "JobSpec",
    "JobSuccessPolicy",
    "JobSuccessPolicyRule",
    "JobTemplateSpec",
    "PodFailurePolicy",
    "PodFailurePolicyOnExitCodesRequirement",
    "PodFailurePolicyOnPodConditionsPattern",
    "PodFailurePolicyRule",
]


class PodFailurePolicyOnExitCodesRequirement(ApiModel):
    """Exit codes a pod failure rule matches."""

    operator: str
    values: list[Int32]
    container_name: str | None = None


class PodFailurePolicyOnPodConditionsPattern(ApiModel):
    """A pod condition a pod failure rule matches."""

    type: str
    status: str | None = None


class PodFailurePolicyRule(ApiModel):
    """What a failed pod that matches does to its Job."""

    action: str
    on_exit_codes: PodFailurePolicyOnExitCodesRequirement | None = None
    on_pod_conditions: list[PodFailurePolicyOnPodConditionsPattern] | None = None


class PodFailurePolicy(ApiModel):
    """How a Job treats pod failures."""

    rules: list[PodFailurePolicyRule]


class JobSuccessPolicyRule(ApiModel):
    """Indexes that, once succeeded, make the Job succeed."""

    succeeded_indexes: str | None = None
    succeeded_count: Int32 | None = None


class JobSuccessPolicy(ApiModel):
    """When an indexed Job counts as succeeded."""

    rules: list[JobSuccessPolicyRule]


class JobSpec(ApiModel):
    """batch/v1 JobSpec."""

    template: PodTemplateSpec
    parallelism: Int32 | None = None
    completions: Int32 | None = None
    active_deadline_seconds: Int64 | None = None
    pod_failure_policy: PodFailurePolicy | None = None
    success_policy: JobSuccessPolicy | None = None
    backoff_limit: Int32 | None = None
    backoff_limit_per_index: Int32 | None = None
    max_failed_indexes: Int32 | None = None
    selector: LabelSelector | None = None
    manual_selector: bool | None = None
    ttl_seconds_after_finished: Int32 | None = None
    completion_mode: str | None = None
    suspend: bool | None = None
    pod_replacement_policy: str | None = None
    managed_by: str | None = None


class JobTemplateSpec(ApiModel):
    """batch/v1 JobTemplateSpec."""

    metadata: ObjectMeta | None = None
    spec: JobSpec | None = None
