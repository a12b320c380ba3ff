"""JobSet ``jobset.x-k8s.io/v1alpha2``: the workload a TrainJob becomes."""

from __future__ import annotations

from typing import Final, Literal

from pydantic import Field

from trainer_api._base import ApiModel, KubernetesObject
from trainer_api._batch import JobTemplateSpec
from trainer_api._meta import Condition, ListMeta, ObjectMeta
from trainer_api._types import Int32, Int64
from trainer_api._volumes import PersistentVolumeClaim

__all__ = [
    "JOBSET_API_VERSION",
    "JOBSET_GROUP",
    "JOBSET_VERSION",
    "Coordinator",
    "DependsOn",
    "FailurePolicy",
    "FailurePolicyRule",
    "JobSet",
    "JobSetList",
    "JobSetSpec",
    "JobSetStatus",
    "Network",
    "ReplicatedJob",
    "ReplicatedJobStatus",
    "StartupPolicy",
    "SuccessPolicy",
    "VolumeClaimPolicy",
    "VolumeRetentionPolicy",
]

JOBSET_GROUP: Final = "jobset.x-k8s.io"
JOBSET_VERSION: Final = "v1alpha2"
JOBSET_API_VERSION: Final = f"{JOBSET_GROUP}/{JOBSET_VERSION}"


class DependsOn(ApiModel):
    """A replicated job that must reach ``status`` before this one starts."""

    name: str
    status: Literal["Ready", "Complete"]


class ReplicatedJob(ApiModel):
    """A group of identical Jobs in a JobSet."""

    name: str
    template: JobTemplateSpec
    group_name: str | None = None
    replicas: Int32 | None = None
    depends_on: list[DependsOn] | None = None


class Network(ApiModel):
    """Pod networking of a JobSet (headless service, DNS hostnames)."""

    enable_dns_hostnames: bool | None = Field(default=None, alias="enableDNSHostnames")
    subdomain: str | None = None
    publish_not_ready_addresses: bool | None = None


class SuccessPolicy(ApiModel):
    """When a JobSet counts as complete."""

    operator: Literal["All", "Any"]
    target_replicated_jobs: list[str] | None = None


class FailurePolicyRule(ApiModel):
    """One rule of a failure policy, matched against a failed Job."""

    name: str
    action: Literal[
        "FailJobSet",
        "RestartJobSet",
        "RestartJobSetAndIgnoreMaxRestarts",
        "RestartJob",
        "RestartJobAndIgnoreMaxRestarts",
    ]
    on_job_failure_reasons: list[str] | None = None
    on_job_failure_message_patterns: list[str] | None = None
    target_replicated_jobs: list[str] | None = None


class FailurePolicy(ApiModel):
    """How a JobSet reacts to failed Jobs."""

    max_restarts: Int32 | None = None
    restart_strategy: Literal["Recreate", "BlockingRecreate", "InPlaceRestart"] | None = None
    rules: list[FailurePolicyRule] | None = None


class StartupPolicy(ApiModel):
    """Whether replicated jobs start in order."""

    startup_policy_order: Literal["AnyOrder", "InOrder"]


class Coordinator(ApiModel):
    """The pod whose stable endpoint is published to every pod of the JobSet."""

    replicated_job: str
    job_index: Int64 | None = None
    pod_index: Int64 | None = None


class VolumeRetentionPolicy(ApiModel):
    """What happens to the claims of a volume claim policy."""

    when_deleted: Literal["Delete", "Retain"] | None = None


class VolumeClaimPolicy(ApiModel):
    """PersistentVolumeClaims created for a JobSet and mounted by its pods."""

    templates: list[PersistentVolumeClaim] | None = None
    retention_policy: VolumeRetentionPolicy | None = None


class JobSetSpec(ApiModel):
    """The spec of a JobSet."""

    replicated_jobs: list[ReplicatedJob] | None = None
    network: Network | None = None
    success_policy: SuccessPolicy | None = None
    failure_policy: FailurePolicy | None = None
    startup_policy: StartupPolicy | None = None
    suspend: bool | None = None
    coordinator: Coordinator | None = None
    managed_by: str | None = None
    ttl_seconds_after_finished: Int32 | None = None
    volume_claim_policies: list[VolumeClaimPolicy] | None = None


class ReplicatedJobStatus(ApiModel):
    """Job counts of one replicated job."""

    name: str
    ready: Int32
    succeeded: Int32
    failed: Int32
    active: Int32
    suspended: Int32
    job_restarts: list[Int32] | None = None
    job_restarts_count_towards_max: list[Int32] | None = None


class JobSetStatus(ApiModel):
    """The observed state of a JobSet."""

    conditions: list[Condition] | None = None
    restarts: Int32 | None = None
    restarts_count_towards_max: Int32 | None = None
    terminal_state: str | None = None
    replicated_jobs_status: list[ReplicatedJobStatus] | None = None
    current_in_place_restart_attempt: Int32 | None = None
    previous_in_place_restart_attempt: Int32 | None = None


class JobSet(KubernetesObject):
    """A JobSet object."""

    api_version: Literal["jobset.x-k8s.io/v1alpha2"] = "jobset.x-k8s.io/v1alpha2"
    kind: Literal["JobSet"] = "JobSet"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: JobSetSpec | None = None
    status: JobSetStatus | None = None


class JobSetList(KubernetesObject):
    """A list of JobSets."""

    api_version: Literal["jobset.x-k8s.io/v1alpha2"] = "jobset.x-k8s.io/v1alpha2"
    kind: Literal["JobSetList"] = "JobSetList"
    metadata: ListMeta | None = None
    items: list[JobSet] = Field(default_factory=list)
