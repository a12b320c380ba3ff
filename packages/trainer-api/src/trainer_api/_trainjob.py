"""TrainJob: one training run, referring to a runtime and overriding parts of it."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from trainer_api._base import ApiModel, KubernetesObject
from trainer_api._containers import ResourceRequirements, SecurityContext, VolumeMount
from trainer_api._env import EnvVar, LocalObjectReference
from trainer_api._meta import Condition, ListMeta, ObjectMeta, Time
from trainer_api._pods import PodSchedulingGate, PodSecurityContext
from trainer_api._scheduling import Affinity, Toleration
from trainer_api._types import Int32, Int64
from trainer_api._volumes import Volume

__all__ = [
    "ContainerPatch",
    "DatasetInitializer",
    "Initializer",
    "JobSetSpecPatch",
    "JobSetTemplatePatch",
    "JobSpecPatch",
    "JobStatus",
    "JobTemplatePatch",
    "Metric",
    "ModelInitializer",
    "PodSpecPatch",
    "PodTemplatePatch",
    "ReplicatedJobPatch",
    "RuntimePatch",
    "RuntimeRef",
    "TrainJob",
    "TrainJobList",
    "TrainJobSpec",
    "TrainJobStatus",
    "Trainer",
    "TrainerStatus",
    "TrainingRuntimeSpecPatch",
]


class RuntimeRef(ApiModel):
    """The runtime a TrainJob uses."""

    name: str
    api_group: str | None = None
    kind: str | None = None


class DatasetInitializer(ApiModel):
    """Downloads the dataset into the shared ``initializer`` volume before training."""

    storage_uri: str | None = None
    env: list[EnvVar] | None = None
    secret_ref: LocalObjectReference | None = None


class ModelInitializer(ApiModel):
    """Downloads the pre-trained model into the shared ``initializer`` volume."""

    storage_uri: str | None = None
    env: list[EnvVar] | None = None
    secret_ref: LocalObjectReference | None = None


class Initializer(ApiModel):
    """Dataset and model initializers of a TrainJob."""

    dataset: DatasetInitializer | None = None
    model: ModelInitializer | None = None


class Trainer(ApiModel):
    """What the TrainJob overrides in the runtime's ``node`` container."""

    image: str | None = None
    command: list[str] | None = None
    args: list[str] | None = None
    env: list[EnvVar] | None = None
    num_nodes: Int32 | None = None
    resources_per_node: ResourceRequirements | None = None
    num_proc_per_node: Int32 | None = None


class ContainerPatch(ApiModel):
    """The container fields a runtime patch may set."""

    name: str
    env: list[EnvVar] | None = None
    volume_mounts: list[VolumeMount] | None = None
    security_context: SecurityContext | None = None


class PodSpecPatch(ApiModel):
    """The pod spec fields a runtime patch may set."""

    service_account_name: str | None = None
    node_selector: dict[str, str] | None = None
    affinity: Affinity | None = None
    tolerations: list[Toleration] | None = None
    volumes: list[Volume] | None = None
    init_containers: list[ContainerPatch] | None = None
    containers: list[ContainerPatch] | None = None
    scheduling_gates: list[PodSchedulingGate] | None = None
    image_pull_secrets: list[LocalObjectReference] | None = None
    security_context: PodSecurityContext | None = None
    termination_grace_period_seconds: Int64 | None = None


class PodTemplatePatch(ApiModel):
    """Pod template metadata and spec patch."""

    metadata: ObjectMeta | None = None
    spec: PodSpecPatch | None = None


class JobSpecPatch(ApiModel):
    """Job spec patch."""

    template: PodTemplatePatch | None = None


class JobTemplatePatch(ApiModel):
    """Job template metadata and spec patch."""

    metadata: ObjectMeta | None = None
    spec: JobSpecPatch | None = None


class ReplicatedJobPatch(ApiModel):
    """Patch of one replicated job of the runtime, by name."""

    name: str
    template: JobTemplatePatch | None = None


class JobSetSpecPatch(ApiModel):
    """JobSet spec patch."""

    replicated_jobs: list[ReplicatedJobPatch] | None = None


class JobSetTemplatePatch(ApiModel):
    """JobSet template metadata and spec patch."""

    metadata: ObjectMeta | None = None
    spec: JobSetSpecPatch | None = None


class TrainingRuntimeSpecPatch(ApiModel):
    """Patch of the runtime spec."""

    template: JobSetTemplatePatch | None = None


class RuntimePatch(ApiModel):
    """A patch of the runtime owned by one manager (a user, Kueue, a webhook)."""

    manager: str
    time: Time | None = None
    training_runtime_spec: TrainingRuntimeSpecPatch | None = None


class TrainJobSpec(ApiModel):
    """The spec of a TrainJob."""

    runtime_ref: RuntimeRef
    initializer: Initializer | None = None
    trainer: Trainer | None = None
    runtime_patches: list[RuntimePatch] | None = None
    suspend: bool | None = None
    active_deadline_seconds: Int64 | None = None
    managed_by: str | None = None


class JobStatus(ApiModel):
    """Job counts of one replicated job of the TrainJob's JobSet."""

    name: str
    ready: Int32
    succeeded: Int32
    failed: Int32
    active: Int32
    suspended: Int32


class Metric(ApiModel):
    """One training metric reported by the trainer."""

    name: str
    value: str


class TrainerStatus(ApiModel):
    """Progress the trainer reports."""

    progress_percentage: Int32 | None = None
    estimated_remaining_seconds: Int32 | None = None
    metrics: list[Metric] | None = None
    last_updated_time: Time | None = None


class TrainJobStatus(ApiModel):
    """The observed state of a TrainJob."""

    conditions: list[Condition] | None = None
    jobs_status: list[JobStatus] | None = None
    trainer_status: TrainerStatus | None = None


class TrainJob(KubernetesObject):
    """A TrainJob object."""

    api_version: Literal["trainer.kubeflow.org/v1alpha1"] = "trainer.kubeflow.org/v1alpha1"
    kind: Literal["TrainJob"] = "TrainJob"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: TrainJobSpec
    status: TrainJobStatus | None = None


class TrainJobList(KubernetesObject):
    """A list of TrainJobs."""

    api_version: Literal["trainer.kubeflow.org/v1alpha1"] = "trainer.kubeflow.org/v1alpha1"
    kind: Literal["TrainJobList"] = "TrainJobList"
    metadata: ListMeta | None = None
    items: list[TrainJob] = Field(default_factory=list)
