"""Training runtime manifests seen as the SDK's ``Runtime`` (pure)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from trainer_sdk import constants, types
from trainer_sdk.training.engines import engine_named

__all__ = [
    "claim_templates",
    "container_devices",
    "runtime_from_manifest",
    "trainer_container",
]


def claim_templates(spec: Mapping[str, Any]) -> tuple[str, ...]:
    """The names of a JobSet spec's ``volumeClaimPolicies`` templates (a runtime's
    ``spec.template.spec`` or a JobSet's ``spec``): JobSet makes a claim ``<name>-<JobSet>`` of
    each and adds it to every pod as volume ``<name>``."""
    return tuple(
        str((template.get("metadata") or {}).get("name", ""))
        for policy in spec.get("volumeClaimPolicies") or ()
        for template in policy.get("templates") or ()
    )


def container_devices(resources: Mapping[str, Any] | None) -> tuple[str, str] | None:
    """(device, count) from a container's resource limits, or None when it has none."""
    limits = (resources or {}).get("limits") or {}
    if not limits:
        return None
    for label in (constants.GPU_LABEL, constants.TPU_LABEL):
        if label in limits:
            return label.split("/")[1], str(limits[label])
    mig = [key for key in limits if key.startswith(constants.GPU_MIG_PREFIX)]
    if mig:
        return mig[0].split("/")[1], str(limits[mig[0]])
    if constants.NPU_LABEL in limits:  # huawei.com/Ascend910: upstream calls the device "npu"
        return "npu", str(limits[constants.NPU_LABEL])
    if constants.CPU_LABEL in limits:
        return constants.CPU_LABEL, str(limits[constants.CPU_LABEL])
    return None


def _replicated_jobs(runtime: Mapping[str, Any]) -> list[dict[str, Any]]:
    return list(
        runtime.get("spec", {}).get("template", {}).get("spec", {}).get("replicatedJobs") or []
    )


def _containers(replicated_job: Mapping[str, Any]) -> Iterable[dict[str, Any]]:
    pod = replicated_job.get("template", {}).get("spec", {}).get("template", {}).get("spec", {})
    return pod.get("containers") or []


def trainer_container(runtime: Mapping[str, Any]) -> dict[str, Any] | None:
    """The ``node`` container of the replicated job labelled as the trainer ancestor."""
    for replicated_job in _replicated_jobs(runtime):
        labels = replicated_job.get("template", {}).get("metadata", {}).get("labels") or {}
        if constants.TRAINJOB_ANCESTOR_LABEL not in labels:
            continue
        for container in _containers(replicated_job):
            if container.get("name") == constants.NODE:
                return dict(container)
    return None


def runtime_from_manifest(runtime: Mapping[str, Any]) -> types.Runtime:
    """A ClusterTrainingRuntime or TrainingRuntime manifest (camelCase dict) as a ``Runtime``."""
    metadata = runtime.get("metadata") or {}
    labels = metadata.get("labels") or {}
    framework = labels.get(constants.RUNTIME_FRAMEWORK_LABEL, constants.UNKNOWN)
    policy = runtime.get("spec", {}).get("mlPolicy") or {}
    container = trainer_container(runtime) or {}
    engine = engine_named(framework)
    trainer = types.RuntimeTrainer(
        trainer_type=(
            types.TrainerType.BUILTIN_TRAINER
            if engine is not None
            else types.TrainerType.CUSTOM_TRAINER
        ),
        framework=framework,
        image=container.get("image", constants.UNKNOWN),
    )
    if devices := container_devices(container.get("resources")):
        trainer.device, trainer.device_count = devices
    mpi = policy.get("mpi")
    if mpi and mpi.get("numProcPerNode"):
        trainer.device_count = str(mpi["numProcPerNode"])
    num_nodes = policy.get("numNodes")
    if num_nodes:
        trainer.num_nodes = int(num_nodes)
        if trainer.device_count.isdigit():
            trainer.device_count = str(int(trainer.device_count) * int(num_nodes))
    if framework == types.TORCH_TUNE:
        trainer.set_command(constants.TORCH_TUNE_COMMAND)
    elif engine is not None:  # the runtime's own command runs the engine
        trainer.set_command(tuple(container.get("command") or ()))
    elif "torch" in policy:
        trainer.set_command(constants.TORCH_COMMAND)
    elif mpi is not None:
        trainer.set_command(constants.MPI_COMMAND)
    else:
        trainer.set_command(constants.DEFAULT_COMMAND)
    kind = types.RuntimeKind(runtime.get("kind", constants.CLUSTER_TRAINING_RUNTIME_KIND))
    return types.Runtime(name=metadata.get("name", ""), trainer=trainer, kind=kind)
