"""The schema rules of the API, in one table.

Each rule is written once and used twice: ``validate`` checks it in Python and the CRD
generator writes it into the OpenAPI schema (bounds, patterns, list types, defaults) or as
an ``x-kubernetes-validations`` CEL rule. ``Rule.check`` is the Python twin of ``Rule.cel``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from typing import Final

from trainer_api._base import ApiModel
from trainer_api._core_rules import CORE_FIELD_SPECS
from trainer_api._fieldspec import ATOMIC, FieldSpec, Rule, named_map
from trainer_api._jobset import (
    FailurePolicy,
    FailurePolicyRule,
    JobSetSpec,
    JobSetStatus,
    ReplicatedJob,
    ReplicatedJobStatus,
    SuccessPolicy,
    VolumeClaimPolicy,
    VolumeRetentionPolicy,
)
from trainer_api._meta import Condition
from trainer_api._optimization_rules import OPTIMIZATION_CLASS_RULES, OPTIMIZATION_FIELD_SPECS
from trainer_api._runtime import (
    ClusterTrainingRuntime,
    CoschedulingPodGroupPolicySource,
    FluxMLPolicySource,
    MLPolicy,
    MPIMLPolicySource,
    NetworkTopology,
    TorchEnvInjection,
    TorchEnvInjectionTarget,
    TrainingRuntime,
    TrainingRuntimeSpec,
)
from trainer_api._trainjob import (
    ContainerPatch,
    DatasetInitializer,
    JobSetSpecPatch,
    JobStatus,
    Metric,
    ModelInitializer,
    PodSpecPatch,
    ReplicatedJobPatch,
    RuntimePatch,
    RuntimeRef,
    Trainer,
    TrainerStatus,
    TrainJob,
    TrainJobSpec,
    TrainJobStatus,
)
from trainer_api._wellknown import (
    CLUSTER_TRAINING_RUNTIME_KIND,
    DATASET_INITIALIZER,
    DEFAULT_MANAGED_BY,
    GROUP,
    MANAGED_BY_VALUES,
    MODEL_INITIALIZER,
    NODE,
)

__all__ = ["CLASS_RULES", "FIELD_SPECS", "specs_for"]

RFC1035_LABEL: Final = r"^[a-z]([-a-z0-9]*[a-z0-9])?$"
STORAGE_URI: Final = r"^[A-Za-z][A-Za-z0-9+.-]*://.+$"
DOMAIN_PREFIXED_PATH: Final = (
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
    r"/[A-Za-z0-9/\-._~%!$&'()*+,;=:]+$"
)
CONDITION_REASON: Final = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
CONDITION_TYPE: Final = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)
FIELD_IS_IMMUTABLE: Final = "field is immutable"
VALUE_IS_IMMUTABLE: Final = "Value is immutable"


def _env_list() -> FieldSpec:
    return FieldSpec(max_items=128, list_type="map", map_keys=("name",))


def _at_least_one(message: str) -> Rule:
    return Rule("self >= 1", message, lambda value: value >= 1)


def _has_valid_name(job: TrainJob) -> bool:
    return job.metadata.name is not None and re.match(RFC1035_LABEL, job.metadata.name) is not None


def _has_short_name(job: TrainJob) -> bool:
    return job.metadata.name is not None and len(job.metadata.name) <= 63


def _one_policy(policy: MLPolicy) -> bool:
    chosen = (policy.torch, policy.mpi, policy.jax, policy.xgboost, policy.flux)
    return sum(source is not None for source in chosen) <= 1


def _startup_without_depends_on(spec: JobSetSpec) -> bool:
    in_order = (
        spec.startup_policy is not None and spec.startup_policy.startup_policy_order == "InOrder"
    )
    return not (in_order and any(job.depends_on is not None for job in spec.replicated_jobs or []))


def _no_template_namespace(policy: VolumeClaimPolicy) -> bool:
    return all(
        template.metadata is None or not template.metadata.namespace
        for template in policy.templates or []
    )


def _no_protected_env(patch: ContainerPatch) -> bool:
    return not (patch.name in _PROTECTED_CONTAINERS and patch.env is not None)


_PROTECTED_CONTAINERS: Final = (NODE, DATASET_INITIALIZER, MODEL_INITIALIZER)

_STORAGE_URI_RULE: Final = Rule(
    "self == '' || self.matches('^[A-Za-z][A-Za-z0-9+.-]*://.+$')",
    "storageUri may be empty, or it must be a valid URI (scheme://...)",
    lambda uri: uri == "" or re.match(STORAGE_URI, uri) is not None,
)

_INITIALIZER: Final = {
    "storage_uri": FieldSpec(max_length=2048, rules=(_STORAGE_URI_RULE,)),
    "env": _env_list(),
}

CLASS_RULES: Final[Mapping[type[ApiModel], tuple[Rule, ...]]] = {
    TrainJob: (
        Rule(
            "self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",
            "metadata.name must match RFC 1035 DNS label format",
            _has_valid_name,
            field="metadata.name",
        ),
        Rule(
            "size(self.metadata.name) <= 63",
            "metadata.name must be no more than 63 characters",
            _has_short_name,
            field="metadata.name",
        ),
    ),
    TrainerStatus: (
        Rule(
            "has(self.lastUpdatedTime)",
            "lastUpdatedTime is required when trainerStatus is present",
            lambda status: status.last_updated_time is not None,
        ),
    ),
    MLPolicy: (
        Rule(
            "[has(self.torch), has(self.mpi), has(self.jax), has(self.xgboost),"
            "has(self.flux)].filter(x, x).size() <= 1",
            "Only one of the policy can be configured",
            _one_policy,
        ),
    ),
    JobSetSpec: (
        Rule(
            "!(has(self.startupPolicy) && self.startupPolicy.startupPolicyOrder == 'InOrder'"
            " && self.replicatedJobs.exists(x, has(x.dependsOn)))",
            "StartupPolicy and DependsOn APIs are mutually exclusive",
            _startup_without_depends_on,
        ),
    ),
    VolumeClaimPolicy: (
        Rule(
            "self.templates.all(t, !has(t.metadata.namespace) || size(t.metadata.namespace) == 0)",
            "namespace cannot be set for VolumeClaimPolicies templates",
            _no_template_namespace,
        ),
    ),
    ContainerPatch: (
        Rule(
            "!(self.name in ['node', 'dataset-initializer', 'model-initializer'] && has(self.env))",
            "env must not be patched for the node and initializer containers: "
            "set spec.trainer.env or spec.initializer instead",
            _no_protected_env,
            field="env",
        ),
    ),
    **OPTIMIZATION_CLASS_RULES,
}
"""Rules on whole objects, by model."""

FIELD_SPECS: Final[Mapping[type[ApiModel], Mapping[str, FieldSpec]]] = {
    **CORE_FIELD_SPECS,
    **OPTIMIZATION_FIELD_SPECS,
    TrainJob: {"status": FieldSpec(min_properties=1)},
    TrainingRuntime: {"spec": FieldSpec(min_properties=1)},
    ClusterTrainingRuntime: {"spec": FieldSpec(min_properties=1)},
    TrainingRuntimeSpec: {"template": FieldSpec(min_properties=1)},
    TrainJobSpec: {
        "runtime_ref": FieldSpec(immutable=FIELD_IS_IMMUTABLE),
        "initializer": FieldSpec(immutable=FIELD_IS_IMMUTABLE),
        "trainer": FieldSpec(immutable=FIELD_IS_IMMUTABLE),
        "runtime_patches": FieldSpec(max_items=16, list_type="map", map_keys=("manager",)),
        "suspend": FieldSpec(default=False),
        "active_deadline_seconds": FieldSpec(minimum=1, immutable=FIELD_IS_IMMUTABLE),
        "managed_by": FieldSpec(
            max_length=253,
            default=DEFAULT_MANAGED_BY,
            immutable=FIELD_IS_IMMUTABLE,
            rules=(
                Rule(
                    "self in ['trainer.kubeflow.org/trainjob-controller', "
                    "'kueue.x-k8s.io/multikueue']",
                    "ManagedBy must be trainer.kubeflow.org/trainjob-controller or "
                    "kueue.x-k8s.io/multikueue if set",
                    lambda value: value in MANAGED_BY_VALUES,
                ),
            ),
        ),
    },
    RuntimeRef: {
        "name": FieldSpec(min_length=1, max_length=253),
        "api_group": FieldSpec(max_length=253, default=GROUP),
        "kind": FieldSpec(max_length=253, default=CLUSTER_TRAINING_RUNTIME_KIND),
    },
    DatasetInitializer: _INITIALIZER,
    ModelInitializer: _INITIALIZER,
    Trainer: {
        "image": FieldSpec(max_length=500),
        "command": FieldSpec(max_items=128, list_type="atomic", item_max_length=1048576),
        "args": FieldSpec(max_items=128, list_type="atomic", item_max_length=1048576),
        "env": _env_list(),
        "num_nodes": FieldSpec(minimum=0),
        "num_proc_per_node": FieldSpec(
            rules=(_at_least_one("numProcPerNode must be greater than or equal to 1"),)
        ),
    },
    RuntimePatch: {
        "manager": FieldSpec(
            min_length=1,
            max_length=253,
            immutable=FIELD_IS_IMMUTABLE,
            rules=(
                Rule(
                    f'self.matches(r"{DOMAIN_PREFIXED_PATH}")',
                    "manager must be a domain-prefixed path such as example.com/my-team",
                    lambda value: re.match(DOMAIN_PREFIXED_PATH, value) is not None,
                ),
            ),
        ),
    },
    JobSetSpecPatch: {"replicated_jobs": named_map(max_items=100)},
    ReplicatedJobPatch: {"name": FieldSpec(min_length=1, max_length=253)},
    PodSpecPatch: {
        "containers": named_map(max_items=64, immutable=FIELD_IS_IMMUTABLE),
        "init_containers": named_map(max_items=64, immutable=FIELD_IS_IMMUTABLE),
        "image_pull_secrets": named_map(max_items=64, immutable=FIELD_IS_IMMUTABLE),
        "security_context": FieldSpec(immutable=FIELD_IS_IMMUTABLE),
        "service_account_name": FieldSpec(max_length=253, immutable=FIELD_IS_IMMUTABLE),
        "termination_grace_period_seconds": FieldSpec(minimum=0, immutable=FIELD_IS_IMMUTABLE),
        "volumes": named_map(max_items=128, immutable=FIELD_IS_IMMUTABLE),
        "tolerations": FieldSpec(max_items=128, list_type="atomic"),
        "scheduling_gates": named_map(max_items=16),
    },
    ContainerPatch: {
        "name": FieldSpec(min_length=1, max_length=253),
        "env": _env_list(),
        "volume_mounts": FieldSpec(max_items=128, list_type="map", map_keys=("name",)),
    },
    TrainJobStatus: {
        "conditions": FieldSpec(max_items=8, list_type="map", map_keys=("type",)),
        "jobs_status": named_map(max_items=100),
    },
    Condition: {
        "message": FieldSpec(max_length=32768),
        "reason": FieldSpec(min_length=1, max_length=1024, pattern=CONDITION_REASON),
        "type": FieldSpec(max_length=316, pattern=CONDITION_TYPE),
        "observed_generation": FieldSpec(minimum=0),
    },
    JobStatus: {
        "name": FieldSpec(min_length=1, max_length=253),
        "active": FieldSpec(minimum=0),
        "failed": FieldSpec(minimum=0),
        "ready": FieldSpec(minimum=0),
        "succeeded": FieldSpec(minimum=0),
        "suspended": FieldSpec(minimum=0),
    },
    TrainerStatus: {
        "progress_percentage": FieldSpec(minimum=0, maximum=100),
        "estimated_remaining_seconds": FieldSpec(minimum=0),
        "metrics": FieldSpec(max_items=256, list_type="atomic"),
    },
    Metric: {
        "name": FieldSpec(min_length=1, max_length=64),
        "value": FieldSpec(min_length=1, max_length=64),
    },
    MPIMLPolicySource: {
        "num_proc_per_node": FieldSpec(
            default=1, rules=(_at_least_one("NumProcPerNode in mpiPolicy must be >= 1"),)
        ),
        "mpi_implementation": FieldSpec(default="OpenMPI"),
        "ssh_auth_mount_path": FieldSpec(max_length=4096, default="/root/.ssh"),
        "run_launcher_as_node": FieldSpec(default=False),
    },
    FluxMLPolicySource: {
        "num_proc_per_node": FieldSpec(
            default=1, rules=(_at_least_one("NumProcPerNode in fluxPolicy must be >= 1"),)
        ),
    },
    TorchEnvInjection: {
        "targets": FieldSpec(max_items=16, list_type="map", map_keys=("jobName",)),
    },
    TorchEnvInjectionTarget: {
        "job_name": FieldSpec(min_length=1, max_length=253),
        "container_names": FieldSpec(
            min_items=1,
            max_items=8,
            item_max_length=63,
            list_type="set",
            rules=(
                Rule(
                    "!self.exists(c, c == 'node')",
                    "containerNames must not include the main node container because PET_* "
                    "envs are always injected into it",
                    lambda names: NODE not in names,
                ),
            ),
        ),
    },
    CoschedulingPodGroupPolicySource: {"schedule_timeout_seconds": FieldSpec(default=60)},
    NetworkTopology: {
        "mode": FieldSpec(default="hard"),
        "highest_tier_allowed": FieldSpec(default=1),
    },
    JobSetSpec: {
        "replicated_jobs": named_map(),
        "failure_policy": FieldSpec(immutable=VALUE_IS_IMMUTABLE),
        "network": FieldSpec(immutable=VALUE_IS_IMMUTABLE),
        "startup_policy": FieldSpec(immutable=VALUE_IS_IMMUTABLE),
        "success_policy": FieldSpec(immutable=VALUE_IS_IMMUTABLE),
        "ttl_seconds_after_finished": FieldSpec(minimum=0),
        "volume_claim_policies": FieldSpec(
            max_items=50, list_type="atomic", immutable=VALUE_IS_IMMUTABLE
        ),
    },
    ReplicatedJob: {
        "depends_on": FieldSpec(
            max_items=5, list_type="map", map_keys=("name",), immutable=VALUE_IS_IMMUTABLE
        ),
        "group_name": FieldSpec(default="default"),
        "replicas": FieldSpec(minimum=0, default=1),
    },
    FailurePolicy: {"restart_strategy": FieldSpec(default="Recreate")},
    FailurePolicyRule: {"target_replicated_jobs": ATOMIC},
    SuccessPolicy: {"target_replicated_jobs": ATOMIC},
    VolumeClaimPolicy: {"templates": FieldSpec(max_items=50, list_type="atomic")},
    VolumeRetentionPolicy: {"when_deleted": FieldSpec(default="Delete")},
    JobSetStatus: {
        "conditions": FieldSpec(list_type="map", map_keys=("type",)),
        "replicated_jobs_status": named_map(),
        "current_in_place_restart_attempt": FieldSpec(minimum=0),
        "previous_in_place_restart_attempt": FieldSpec(minimum=0),
    },
    ReplicatedJobStatus: {
        "job_restarts": FieldSpec(max_items=1024, list_type="atomic"),
        "job_restarts_count_towards_max": FieldSpec(max_items=1024, list_type="atomic"),
    },
}
"""Constraints of fields, by model and attribute name (subclasses inherit them: ``specs_for``)."""


@cache
def specs_for(model_type: type[ApiModel]) -> Mapping[str, FieldSpec]:
    """The field constraints of a model, including those declared for its base classes."""
    merged: dict[str, FieldSpec] = {}
    for base in reversed(model_type.__mro__):
        if isinstance(base, type) and issubclass(base, ApiModel):
            merged.update(FIELD_SPECS.get(base, {}))
    return merged
