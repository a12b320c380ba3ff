"""A TrainJob's manifest, status and pods seen as the SDK's ``TrainJob`` (pure, every backend)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from trainer_sdk import constants, types
from trainer_sdk.checkpoint.status import checkpoint_status

__all__ = [
    "PodView",
    "derive_status",
    "failure_message",
    "to_train_job",
    "trainer_status_from_dict",
]


@dataclass(frozen=True)
class PodView:
    """What the SDK needs of one pod, whatever the backend."""

    name: str
    step: str
    phase: str
    device: str = constants.UNKNOWN
    device_count: str = constants.UNKNOWN


def _condition(status: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    conditions: list[Mapping[str, Any]] = status.get("conditions") or []
    for condition in conditions:
        if condition.get("type") == kind and condition.get("status") == "True":
            return condition
    return None


def derive_status(status: Mapping[str, Any], pods: Iterable[PodView]) -> str:
    """Created, Running, Complete or Failed, as upstream defines them; Suspended while the
    TrainJob's Suspended condition is True; Stopped when it failed because it was stopped."""
    failed = _condition(status, "Failed")
    if failed is not None:
        stopped = failed.get("reason") == constants.TRAINJOB_STOPPED
        return constants.TRAINJOB_STOPPED if stopped else constants.TRAINJOB_FAILED
    if _condition(status, "Complete"):
        return constants.TRAINJOB_COMPLETE
    if _condition(status, "Suspended"):
        return constants.TRAINJOB_SUSPENDED
    phases = [pod.phase for pod in pods]
    if phases and all(
        phase in (constants.POD_RUNNING, constants.POD_SUCCEEDED) for phase in phases
    ):
        return constants.TRAINJOB_RUNNING
    return constants.TRAINJOB_CREATED


def failure_message(status: Mapping[str, Any]) -> str | None:
    """The Failed condition's reason and message, if the job failed."""
    condition = _condition(status, "Failed")
    if condition is None:
        return None
    return ": ".join(part for part in (condition.get("reason"), condition.get("message")) if part)


def _parse_time(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value
    if not value:
        return None
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


def trainer_status_from_dict(document: Mapping[str, Any] | None) -> types.TrainerStatus | None:
    """``status.trainerStatus`` (or the local progress file) as ``TrainerStatus``."""
    if not document:
        return None
    metrics = document.get("metrics") or []
    if isinstance(metrics, Mapping):
        metrics = [{"name": key, "value": value} for key, value in metrics.items()]
    return types.TrainerStatus(
        progress_percentage=document.get("progressPercentage"),
        estimated_remaining_seconds=document.get("estimatedRemainingSeconds"),
        metrics={str(item["name"]): str(item["value"]) for item in metrics},
        last_updated_time=_parse_time(document.get("lastUpdatedTime")),
    )


def to_train_job(
    manifest: Mapping[str, Any],
    runtime: types.Runtime,
    pods: Iterable[PodView],
    progress: Mapping[str, Any] | None = None,
    output: str | None = None,
) -> types.TrainJob:
    """The SDK's view of a TrainJob manifest (with its ``status``) and its pods (``output``:
    where a BuiltinTrainer job's model is, as the backend finds it)."""
    metadata = manifest.get("metadata") or {}
    status = manifest.get("status") or {}
    pod_list = sorted(
        pods, key=lambda pod: (pod.step.startswith(constants.NODE), _step_order(pod.step))
    )
    steps = [
        types.Step(
            name=pod.step,
            status=pod.phase,
            pod_name=pod.name,
            device=pod.device,
            device_count=pod.device_count,
        )
        for pod in pod_list
    ]
    num_nodes = (manifest.get("spec", {}).get("trainer") or {}).get(
        "numNodes"
    ) or runtime.trainer.num_nodes
    created = _parse_time(metadata.get("creationTimestamp")) or datetime.now(timezone.utc)
    trainer_status = trainer_status_from_dict(progress or status.get("trainerStatus"))
    return types.TrainJob(
        name=metadata.get("name", ""),
        runtime=runtime,
        steps=steps,
        num_nodes=int(num_nodes),
        creation_timestamp=created,
        status=derive_status(status, pod_list),
        trainer_status=trainer_status,
        message=failure_message(status),
        checkpoint=checkpoint_status(trainer_status.metrics) if trainer_status else None,
        gems_kernels=_gems_kernels(manifest),
        output=output,
    )


def _gems_kernels(manifest: Mapping[str, Any]) -> bool:
    """Whether the trainer's env asks the rank entrypoint for gems kernels (``GemsKernels``)."""
    from trainer_sdk.training.rank_entrypoint import GEMS_ENV

    env = ((manifest.get("spec") or {}).get("trainer") or {}).get("env") or []
    values = [str(item.get("value", "")) for item in env if item.get("name") == GEMS_ENV]
    return bool(values) and values[-1].strip().lower() in ("1", "true")


def _step_order(step: str) -> tuple[int, str]:
    tail = step.rsplit("-", 1)[-1]
    return (int(tail), step) if tail.isdigit() else (-1, step)
