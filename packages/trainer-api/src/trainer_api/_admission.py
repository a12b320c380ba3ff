"""The admission rules upstream's webhooks enforce, beyond what the CRD schema can say."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from trainer_api._errors import FieldError
from trainer_api._jobset import ReplicatedJob
from trainer_api._pods import PodSpec
from trainer_api._runtime import ClusterTrainingRuntime, MLPolicy, TrainingRuntime
from trainer_api._trainjob import (
    DatasetInitializer,
    ModelInitializer,
    PodSpecPatch,
    ReplicatedJobPatch,
    TrainJob,
)
from trainer_api._wellknown import (
    ANCESTOR_LABEL,
    CLUSTER_TRAINING_RUNTIME_KIND,
    DATASET_INITIALIZER,
    INITIALIZER_VOLUME,
    MODEL_INITIALIZER,
    NODE,
    RESERVED_ENV_PREFIXES,
    TRAINER_STEP,
)

__all__ = ["runtime_errors", "train_job_errors"]

Runtime = TrainingRuntime | ClusterTrainingRuntime

_STEP_CONTAINERS: Final = {
    DATASET_INITIALIZER: DATASET_INITIALIZER,
    MODEL_INITIALIZER: MODEL_INITIALIZER,
    TRAINER_STEP: NODE,
}
"""The container each ancestor step's replicated job must hold."""
_TEMPLATE: Final = "spec.template.spec.replicatedJobs"


def runtime_errors(runtime: Runtime) -> Iterator[FieldError]:
    """Ancestor replicated jobs (the trainer included) run once and hold their step's container.

    A job's step is its ancestor label, as upstream's webhook reads it: a job without a known
    ancestor label is not a step whatever its name.
    """
    for index, job in enumerate(_replicated_jobs(runtime)):
        step = _step(job)
        if step is None:
            continue
        if job.replicas is not None and job.replicas != 1:
            yield FieldError(
                f"{_TEMPLATE}[{index}].replicas",
                f"the {step} replicated job must have replicas 1 (got {job.replicas})",
            )
        container = _STEP_CONTAINERS[step]
        if container not in _container_names(_pod_spec(job)):
            yield FieldError(
                f"{_TEMPLATE}[{index}].template.spec.template.spec.containers",
                f'the {step} replicated job must have a container named "{container}"',
            )


def train_job_errors(
    job: TrainJob, old: TrainJob | None, runtime: Runtime | None
) -> Iterator[FieldError]:
    """Update rules, and with the runtime, the rules that span the TrainJob and its runtime."""
    # Suspended before or after the update, as upstream: Kueue suspends and patches in one update.
    # (Whether the JobSet still has active pods is for the webhook, which reads the JobSet.)
    suspended = (old is not None and old.spec.suspend) or job.spec.suspend
    if old is not None and not suspended and _patches(job) != _patches(old):
        yield FieldError(
            "spec.runtimePatches",
            "may change only when the TrainJob is suspended (spec.suspend) before or after "
            "the update",
        )
    if runtime is None:
        return
    yield from _reference_errors(job, runtime)
    yield from _reserved_env_errors(job, runtime.spec.ml_policy)
    yield from _patch_target_errors(job, runtime)
    if job.spec.initializer is not None:
        yield from _initializer_errors(DATASET_INITIALIZER, job.spec.initializer.dataset, runtime)
        yield from _initializer_errors(MODEL_INITIALIZER, job.spec.initializer.model, runtime)


def _reference_errors(job: TrainJob, runtime: Runtime) -> Iterator[FieldError]:
    ref = job.spec.runtime_ref
    kind = ref.kind or CLUSTER_TRAINING_RUNTIME_KIND
    if ref.name != runtime.metadata.name or kind != runtime.kind:
        yield FieldError(
            "spec.runtimeRef",
            f"refers to {kind} {ref.name!r}, but the runtime given is "
            f"{runtime.kind} {runtime.metadata.name!r}",
        )


def _reserved_env_errors(job: TrainJob, policy: MLPolicy | None) -> Iterator[FieldError]:
    if policy is None or job.spec.trainer is None:
        return
    for framework, prefixes in RESERVED_ENV_PREFIXES.items():
        if getattr(policy, framework) is None:
            continue
        for index, env in enumerate(job.spec.trainer.env or []):
            if env.name.startswith(prefixes):
                yield FieldError(
                    f"spec.trainer.env[{index}].name",
                    f"{env.name} is reserved: the {framework} runtime sets env names starting "
                    f"with {' or '.join(prefixes)}",
                )


def _patch_target_errors(job: TrainJob, runtime: Runtime) -> Iterator[FieldError]:
    jobs = {replicated.name: replicated for replicated in _replicated_jobs(runtime)}
    for index, patch in enumerate(job.spec.runtime_patches or []):
        template = patch.training_runtime_spec.template if patch.training_runtime_spec else None
        spec = template.spec if template is not None else None
        targets = spec.replicated_jobs if spec is not None else None
        for job_index, target in enumerate(targets or []):
            path = (
                f"spec.runtimePatches[{index}].trainingRuntimeSpec.template.spec."
                f"replicatedJobs[{job_index}]"
            )
            if target.name not in jobs:
                yield FieldError(
                    f"{path}.name",
                    f"replicated job {target.name!r} does not exist in runtime "
                    f"{runtime.metadata.name!r} (it has {', '.join(sorted(jobs))})",
                )
                continue
            pod = _pod_spec(jobs[target.name])
            pod_patch = _pod_patch(target)
            if pod_patch is None:
                continue
            for field, patches, existing in (
                ("containers", pod_patch.containers, _container_names(pod)),
                ("initContainers", pod_patch.init_containers, _container_names(pod, init=True)),
            ):
                for container_index, container in enumerate(patches or []):
                    if container.name not in existing:
                        yield FieldError(
                            f"{path}.template.spec.template.spec.{field}[{container_index}].name",
                            f"container {container.name!r} does not exist in replicated job "
                            f"{target.name!r} of runtime {runtime.metadata.name!r}",
                        )


def _initializer_errors(
    step: str, initializer: DatasetInitializer | ModelInitializer | None, runtime: Runtime
) -> Iterator[FieldError]:
    """A runtime that cannot run the initializer: at ``spec.runtimeRef`` with upstream's
    message, then at the initializer's own field with the runtime's name."""
    if initializer is None:
        return
    problem = _initializer_problem(step, runtime)
    if problem is not None:
        upstream, ours = problem
        kind = "dataset" if step == DATASET_INITIALIZER else "model"
        yield FieldError("spec.runtimeRef", upstream)
        yield FieldError(f"spec.initializer.{kind}", f"runtime {runtime.metadata.name!r}: {ours}")


def _initializer_problem(step: str, runtime: Runtime) -> tuple[str, str] | None:
    """(upstream's message, ours) for what ``runtime`` lacks to run ``step``; None if nothing."""
    jobs = [job for job in _replicated_jobs(runtime) if _step(job, by_name=True) == step]
    if not jobs:
        config = "datasetConfig" if step == DATASET_INITIALIZER else "modelConfig"
        return (
            f"must have {step} job when trainJob is configured with input {config}",
            f"has no {step} replicated job",
        )
    pod = _pod_spec(jobs[0])
    containers = [c for c in pod.containers if c.name == step] if pod is not None else []
    if not containers:
        return (
            f"must have container with name - {step} in the {step} job",
            f"the {step} job has no {step!r} container",
        )
    if INITIALIZER_VOLUME not in {mount.name for mount in containers[0].volume_mounts or []}:
        return (
            f"must have volumeMount with name - {INITIALIZER_VOLUME} in container {step} "
            f"of the {step} job",
            f"the {step!r} container must mount the {INITIALIZER_VOLUME!r} volume (volumeMounts)",
        )
    return None


def _replicated_jobs(runtime: Runtime) -> list[ReplicatedJob]:
    spec = runtime.spec.template.spec
    return list(spec.replicated_jobs or []) if spec is not None else []


def _step(job: ReplicatedJob, by_name: bool = False) -> str | None:
    """The ancestor step of a replicated job: its label, when the label names a step; else,
    ``by_name``, its name if that is an initializer's."""
    metadata = job.template.metadata
    labels = metadata.labels if metadata is not None else None
    step = (labels or {}).get(ANCESTOR_LABEL)
    if step in _STEP_CONTAINERS:
        return step
    return job.name if by_name and job.name in (DATASET_INITIALIZER, MODEL_INITIALIZER) else None


def _pod_spec(job: ReplicatedJob) -> PodSpec | None:
    spec = job.template.spec
    return spec.template.spec if spec is not None else None


def _container_names(pod: PodSpec | None, init: bool = False) -> set[str]:
    if pod is None:
        return set()
    containers = pod.init_containers if init else pod.containers
    return {container.name for container in containers or []}


def _pod_patch(target: ReplicatedJobPatch) -> PodSpecPatch | None:
    job_spec = target.template.spec if target.template is not None else None
    pod = job_spec.template if job_spec is not None else None
    return pod.spec if pod is not None else None


def _patches(job: TrainJob) -> list[object]:
    return [patch.to_dict() for patch in job.spec.runtime_patches or []]
