"""The runtime-info model: what one TrainJob's runtime looks like before the plugins run.

`runtime_info` takes the TrainJob and its runtime (trainer_api models), applies the TrainJob's
runtimePatches to the runtime's JobSet template as strategic merges in list order, puts the
TrainJob's trainer and initializer settings into their containers, and describes the result as
pod sets (one per replicated job). Plugins then mutate the info; the JobSet plugin renders it.

The policies are typed (``MLPolicy``, ``PodGroupPolicy``, copies a plugin may change). The JobSet
being rendered (``RuntimeInfo.spec``) stays a manifest dict: it is the result of strategic merges
(a dict operation on the wire form) and is written out as a dict, and plugins edit its pod
templates in place through ``podspecs``. Pod sets reference the replicated-job dicts inside
``RuntimeInfo.spec``: changing a pod set's container changes the JobSet that will be rendered.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, cast

import trainer_api
from trainer_api import (
    DatasetInitializer,
    MLPolicy,
    ModelInitializer,
    PodGroupPolicy,
    Quantity,
    Trainer,
    TrainJob,
)

from trainer_runtime import constants, podspecs, resources
from trainer_runtime.errors import BuildError
from trainer_runtime.inputs import Runtime
from trainer_runtime.settings import Settings
from trainer_runtime.strategic_merge import strategic_merge
from trainer_runtime.views import ContainerDoc, PodSpecDoc, ResourcesDoc, VolumeDoc, env_docs

__all__ = ["ANCESTORS", "PodSet", "RuntimeInfo", "Scheduler", "runtime_info"]

# Steps a TrainJob field describes; each runs as one Job (replicas: 1), as upstream requires.
ANCESTORS: Final = (
    trainer_api.DATASET_INITIALIZER,
    trainer_api.MODEL_INITIALIZER,
    trainer_api.TRAINER_STEP,
)


@dataclass
class PodSet:
    """One replicated job: ``replicas`` Jobs of ``count`` pods each (initializer and trainer
    steps always have one Job)."""

    name: str
    ancestor: str | None
    replicas: int
    count: int
    job: dict[str, Any] = field(repr=False)

    @property
    def pod_spec(self) -> PodSpecDoc:
        """The pod spec of this replicated job (mutable)."""
        template = (
            self.job.setdefault("template", {}).setdefault("spec", {}).setdefault("template", {})
        )
        pod_spec: PodSpecDoc = template.setdefault("spec", {})
        return pod_spec

    @property
    def containers(self) -> list[ContainerDoc]:
        """The pod's containers (mutable)."""
        return self.pod_spec.setdefault("containers", [])

    @property
    def volumes(self) -> list[VolumeDoc]:
        """The pod's volumes (mutable)."""
        return self.pod_spec.setdefault("volumes", [])

    def requests(self) -> dict[str, Quantity]:
        """What one pod requests (containers summed, see ``resources.pod_requests``)."""
        return resources.pod_requests(self.pod_spec)

    def container(self, name: str) -> ContainerDoc | None:
        """The container called ``name``, or None."""
        return next((c for c in self.containers if c.get("name") == name), None)

    def container_or_init_container(self, name: str) -> ContainerDoc | None:
        """The container called ``name``, else the init container called ``name``, or None."""
        init_containers = self.pod_spec.get("initContainers") or ()
        return self.container(name) or next(
            (c for c in init_containers if c.get("name") == name), None
        )

    def endpoints(self, job_name: str, subdomain: str) -> Iterator[str]:
        """Pod host names in rank order.

        ``<job>-<replicatedJob>-<jobIndex>-<podIndex>.<subdomain>``
        """
        for job_index in range(self.replicas):
            for pod_index in range(self.count):
                yield f"{job_name}-{self.name}-{job_index}-{pod_index}.{subdomain}"


@dataclass
class Scheduler:
    """Labels and annotations every pod template gets (pod-group membership)."""

    pod_labels: dict[str, str] = field(default_factory=dict)
    pod_annotations: dict[str, str] = field(default_factory=dict)


@dataclass
class RuntimeInfo:
    """A TrainJob's runtime after patches and TrainJob settings, as the plugins see it."""

    job_name: str
    namespace: str | None
    runtime_kind: str
    runtime_name: str
    ml_policy: MLPolicy
    pod_group_policy: PodGroupPolicy | None
    metadata: dict[str, Any]
    spec: dict[str, Any]
    runtime_spec: Mapping[str, Any] = field(repr=False)
    pod_sets: list[PodSet] = field(default_factory=list)
    scheduler: Scheduler = field(default_factory=Scheduler)
    settings: Settings = field(default_factory=Settings, repr=False)

    @property
    def subdomain(self) -> str:
        """The headless service name pods resolve each other through."""
        return str((self.spec.get("network") or {}).get("subdomain") or self.job_name)

    def pod_set(self, name: str) -> PodSet | None:
        """The pod set called ``name``, or None."""
        return next((ps for ps in self.pod_sets if ps.name == name), None)

    def pod_set_by_ancestor(self, ancestor: str) -> PodSet | None:
        """The first pod set labelled with ``ancestor``, or None."""
        return next((ps for ps in self.pod_sets if ps.ancestor == ancestor), None)

    def trainer_pod_set(self) -> PodSet | None:
        """The pod set labelled as the trainer step, or None."""
        return self.pod_set_by_ancestor(trainer_api.TRAINER_STEP)

    def trainer_container(self) -> ContainerDoc | None:
        """The ``node`` container of the trainer pod set, or None."""
        trainer = self.trainer_pod_set()
        return trainer.container(trainer_api.NODE) if trainer else None

    def remove_pod_set(self, pod_set: PodSet) -> None:
        """Drop a replicated job and every dependency on it."""
        self.pod_sets.remove(pod_set)
        jobs = self.spec["replicatedJobs"]
        jobs[:] = [job for job in jobs if job is not pod_set.job]
        for job in jobs:
            if "dependsOn" in job:
                job["dependsOn"] = [
                    dep for dep in job["dependsOn"] if dep.get("name") != pod_set.name
                ]
                if not job["dependsOn"]:
                    del job["dependsOn"]


def runtime_info(
    job: TrainJob,
    runtime: Runtime,
    settings: Settings | None = None,
) -> RuntimeInfo:
    """Describe ``runtime`` patched and filled in for ``job`` (neither is changed).

    The trainer pod set starts with the runtime's ``mlPolicy.numNodes``; the ML-policy plugins
    apply the TrainJob's ``numNodes`` and env, so that their own env follows the user's.
    """
    runtime_spec: dict[str, Any] = runtime.to_dict().get("spec") or {}  # a fresh dict
    for patch in job.spec.runtime_patches or ():
        if patch.training_runtime_spec is not None:
            runtime_spec = strategic_merge(runtime_spec, patch.training_runtime_spec.to_dict())
    template = runtime_spec.get("template") or {}
    spec = copy.deepcopy(template.get("spec") or {})
    if not spec.get("replicatedJobs"):
        raise BuildError(
            f"{runtime.kind} {runtime.metadata.name!r}: "
            "spec.template.spec.replicatedJobs must list at least one replicated job"
        )
    ml_policy = runtime.spec.ml_policy
    pod_group_policy = runtime.spec.pod_group_policy
    info = RuntimeInfo(
        job_name=job.metadata.name or "",
        namespace=job.metadata.namespace,
        runtime_kind=runtime.kind,
        runtime_name=runtime.metadata.name or "",
        ml_policy=ml_policy.model_copy(deep=True) if ml_policy is not None else MLPolicy(),
        pod_group_policy=(
            pod_group_policy.model_copy(deep=True) if pod_group_policy is not None else None
        ),
        metadata=copy.deepcopy(template.get("metadata") or {}),
        spec=spec,
        runtime_spec=copy.deepcopy(template.get("spec") or {}),
        settings=settings or Settings(),
    )
    num_nodes = info.ml_policy.num_nodes or 1
    for replicated_job in spec["replicatedJobs"]:
        labels = ((replicated_job.get("template") or {}).get("metadata") or {}).get("labels") or {}
        ancestor = labels.get(trainer_api.ANCESTOR_LABEL)
        job_spec_of_template = (replicated_job.get("template") or {}).get("spec") or {}
        count = (
            num_nodes
            if ancestor == trainer_api.TRAINER_STEP
            else int(job_spec_of_template.get("parallelism") or 1)
        )
        info.pod_sets.append(
            PodSet(
                name=str(replicated_job.get("name")),
                ancestor=ancestor,
                replicas=1 if ancestor in ANCESTORS else int(replicated_job.get("replicas", 1)),
                count=count,
                job=replicated_job,
            )
        )
    if job.spec.trainer is not None:
        _apply_trainer(info, job.spec.trainer)
    if job.spec.initializer is not None:
        _apply_initializer(info, trainer_api.DATASET_INITIALIZER, job.spec.initializer.dataset)
        _apply_initializer(info, trainer_api.MODEL_INITIALIZER, job.spec.initializer.model)
    return info


def _apply_trainer(info: RuntimeInfo, trainer: Trainer) -> None:
    container = info.trainer_container()
    if container is None:
        return
    if trainer.image is not None:
        container["image"] = trainer.image
    if trainer.command is not None:
        container["command"] = list(trainer.command)
    if trainer.args is not None:
        container["args"] = list(trainer.args)
    node_resources = trainer.resources_per_node
    if node_resources is not None and (node_resources_doc := node_resources.to_dict()):
        merged = strategic_merge(dict(container.get("resources") or {}), node_resources_doc)
        container["resources"] = cast(ResourcesDoc, merged)


def _apply_initializer(
    info: RuntimeInfo, step: str, settings: DatasetInitializer | ModelInitializer | None
) -> None:
    pod_set = info.pod_set_by_ancestor(step)
    container = pod_set.container(step) if pod_set is not None else None
    if container is None or settings is None or not settings.model_fields_set:
        return
    if settings.storage_uri is not None:
        podspecs.upsert_env(
            container,
            [podspecs.value_env(constants.INITIALIZER_ENV_STORAGE_URI, settings.storage_uri)],
        )
    podspecs.upsert_env(container, env_docs(var.to_dict() for var in settings.env or ()))
    secret = settings.secret_ref.name if settings.secret_ref is not None else None
    if secret:
        env_from = container.setdefault("envFrom", [])
        source = {"secretRef": {"name": secret}}
        if source not in env_from:
            env_from.append(source)
