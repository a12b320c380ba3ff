"""TrainingRuntime and ClusterTrainingRuntime: reusable blueprints a TrainJob refers to."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from trainer_api._base import ApiModel, KubernetesObject
from trainer_api._jobset import JobSetSpec
from trainer_api._meta import ListMeta, ObjectMeta
from trainer_api._types import Int32, Int64

__all__ = [
    "ClusterTrainingRuntime",
    "ClusterTrainingRuntimeList",
    "CoschedulingPodGroupPolicySource",
    "FluxMLPolicySource",
    "JAXMLPolicySource",
    "JobSetTemplateSpec",
    "MLPolicy",
    "MPIMLPolicySource",
    "NetworkTopology",
    "PodGroupPolicy",
    "TorchEnvInjection",
    "TorchEnvInjectionTarget",
    "TorchMLPolicySource",
    "TrainingRuntime",
    "TrainingRuntimeList",
    "TrainingRuntimeSpec",
    "VolcanoPodGroupPolicySource",
    "XGBoostMLPolicySource",
]

MPIImplementation = Literal["OpenMPI", "Intel", "MPICH", ""]


class TorchEnvInjectionTarget(ApiModel):
    """Containers of one replicated job that also receive the ``PET_*`` env."""

    job_name: str
    container_names: list[str]


class TorchEnvInjection(ApiModel):
    """Where the torch plugin injects its env besides the ``node`` container."""

    targets: list[TorchEnvInjectionTarget] | None = None


class TorchMLPolicySource(ApiModel):
    """PyTorch distributed (torchrun) policy."""

    env_injection: TorchEnvInjection | None = None


class MPIMLPolicySource(ApiModel):
    """MPI policy: launcher plus workers reached over SSH."""

    num_proc_per_node: Int32 | None = None
    mpi_implementation: MPIImplementation | None = None
    ssh_auth_mount_path: str | None = None
    run_launcher_as_node: bool | None = None


class JAXMLPolicySource(ApiModel):
    """JAX distributed policy."""


class XGBoostMLPolicySource(ApiModel):
    """XGBoost (Rabit tracker) policy."""


class FluxMLPolicySource(ApiModel):
    """Flux Framework policy."""

    num_proc_per_node: Int32 | None = None


class MLPolicy(ApiModel):
    """The framework a runtime runs, and its node count; at most one framework is set."""

    num_nodes: Int32 | None = None
    torch: TorchMLPolicySource | None = None
    mpi: MPIMLPolicySource | None = None
    jax: JAXMLPolicySource | None = None
    xgboost: XGBoostMLPolicySource | None = None
    flux: FluxMLPolicySource | None = None


class CoschedulingPodGroupPolicySource(ApiModel):
    """Gang scheduling through the scheduler-plugins coscheduling plugin."""

    schedule_timeout_seconds: Int32 | None = None


class NetworkTopology(ApiModel):
    """Volcano network-topology-aware scheduling."""

    mode: Literal["hard", "soft"] | None = None
    highest_tier_allowed: Int64 | None = None


class VolcanoPodGroupPolicySource(ApiModel):
    """Gang scheduling through Volcano."""

    network_topology: NetworkTopology | None = None


class PodGroupPolicy(ApiModel):
    """Gang-scheduling policy of a runtime."""

    coscheduling: CoschedulingPodGroupPolicySource | None = None
    volcano: VolcanoPodGroupPolicySource | None = None


class JobSetTemplateSpec(ApiModel):
    """The JobSet a runtime renders, before the TrainJob is applied to it."""

    metadata: ObjectMeta | None = None
    spec: JobSetSpec | None = None


class TrainingRuntimeSpec(ApiModel):
    """The spec of a TrainingRuntime or ClusterTrainingRuntime."""

    ml_policy: MLPolicy | None = None
    pod_group_policy: PodGroupPolicy | None = None
    template: JobSetTemplateSpec


class TrainingRuntime(KubernetesObject):
    """A namespaced runtime."""

    api_version: Literal["trainer.kubeflow.org/v1alpha1"] = "trainer.kubeflow.org/v1alpha1"
    kind: Literal["TrainingRuntime"] = "TrainingRuntime"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: TrainingRuntimeSpec


class ClusterTrainingRuntime(KubernetesObject):
    """A cluster-scoped runtime."""

    api_version: Literal["trainer.kubeflow.org/v1alpha1"] = "trainer.kubeflow.org/v1alpha1"
    kind: Literal["ClusterTrainingRuntime"] = "ClusterTrainingRuntime"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: TrainingRuntimeSpec


class TrainingRuntimeList(KubernetesObject):
    """A list of TrainingRuntimes."""

    api_version: Literal["trainer.kubeflow.org/v1alpha1"] = "trainer.kubeflow.org/v1alpha1"
    kind: Literal["TrainingRuntimeList"] = "TrainingRuntimeList"
    metadata: ListMeta | None = None
    items: list[TrainingRuntime] = Field(default_factory=list)


class ClusterTrainingRuntimeList(KubernetesObject):
    """A list of ClusterTrainingRuntimes."""

    api_version: Literal["trainer.kubeflow.org/v1alpha1"] = "trainer.kubeflow.org/v1alpha1"
    kind: Literal["ClusterTrainingRuntimeList"] = "ClusterTrainingRuntimeList"
    metadata: ListMeta | None = None
    items: list[ClusterTrainingRuntime] = Field(default_factory=list)
