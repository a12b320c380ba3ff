"""Options for ``TrainerClient.train(options=[...])``, as in ``kubeflow.trainer.options``.

Each option is a callable that edits the TrainJob manifest. Unlike upstream, every option works on
every backend, because the local backend runs the very TrainJob the Kubernetes backend would send.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any, Protocol

from trainer_sdk import constants
from trainer_sdk.types import BuiltinTrainer, CustomTrainer, CustomTrainerContainer

__all__ = [
    "ActiveDeadlineSeconds",
    "Annotations",
    "ContainerPatch",
    "GemsKernels",
    "JobSetSpecPatch",
    "JobSetTemplatePatch",
    "JobSpecPatch",
    "JobTemplatePatch",
    "Labels",
    "Name",
    "Option",
    "PodSpecPatch",
    "PodTemplatePatch",
    "ReplicatedJobPatch",
    "RuntimePatch",
    "TrainerArgs",
    "TrainerCommand",
    "TrainingRuntimeSpecPatch",
]

AnyTrainer = CustomTrainer | CustomTrainerContainer | BuiltinTrainer | None
_DNS_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")


class Option(Protocol):
    """What ``train(options=...)`` accepts: edits the TrainJob manifest in place."""

    def __call__(self, job_spec: dict[str, Any], trainer: AnyTrainer, backend: object) -> None: ...


@dataclass
class Name:
    """Set the TrainJob's name (.metadata.name) instead of a generated one."""

    name: str

    def __post_init__(self) -> None:
        if (
            not isinstance(self.name, str)
            or len(self.name) > 63
            or not _DNS_LABEL.fullmatch(self.name)
        ):
            raise ValueError(
                f"Name.name: expected a DNS-1035 label (lower-case letters, digits, '-', "
                f"starting with a letter, "
                f"at most 63 characters), got {self.name!r}"
            )

    def __call__(self, job_spec: dict[str, Any], trainer: AnyTrainer, backend: object) -> None:
        job_spec.setdefault("metadata", {})["name"] = self.name


@dataclass
class Labels:
    """Add labels to the TrainJob (.metadata.labels)."""

    labels: dict[str, str]

    def __call__(self, job_spec: dict[str, Any], trainer: AnyTrainer, backend: object) -> None:
        job_spec.setdefault("metadata", {}).setdefault("labels", {}).update(self.labels)


@dataclass
class Annotations:
    """Add annotations to the TrainJob (.metadata.annotations)."""

    annotations: dict[str, str]

    def __call__(self, job_spec: dict[str, Any], trainer: AnyTrainer, backend: object) -> None:
        job_spec.setdefault("metadata", {}).setdefault("annotations", {}).update(self.annotations)


def _require_container_trainer(option: str, trainer: AnyTrainer) -> None:
    if trainer is not None and not isinstance(trainer, CustomTrainerContainer):
        raise ValueError(
            f"{option} can only be used with CustomTrainerContainer: CustomTrainer generates "
            "its own command "
            "from the function, and BuiltinTrainer uses the runtime's command"
        )


@dataclass
class TrainerCommand:
    """Override the trainer command (.spec.trainer.command); CustomTrainerContainer only."""

    command: list[str]

    def __call__(self, job_spec: dict[str, Any], trainer: AnyTrainer, backend: object) -> None:
        _require_container_trainer("TrainerCommand", trainer)
        job_spec.setdefault("spec", {}).setdefault("trainer", {})["command"] = list(self.command)


@dataclass
class TrainerArgs:
    """Override the trainer arguments (.spec.trainer.args); CustomTrainerContainer only."""

    args: list[str]

    def __call__(self, job_spec: dict[str, Any], trainer: AnyTrainer, backend: object) -> None:
        _require_container_trainer("TrainerArgs", trainer)
        job_spec.setdefault("spec", {}).setdefault("trainer", {})["args"] = list(self.args)


@dataclass
class ActiveDeadlineSeconds:
    """Fail the TrainJob when it runs longer than ``seconds`` (.spec.activeDeadlineSeconds)."""

    seconds: int

    def __post_init__(self) -> None:
        if type(self.seconds) is not int or self.seconds < 1:
            raise ValueError("activeDeadlineSeconds must be a positive integer (minimum 1)")

    def __call__(self, job_spec: dict[str, Any], trainer: AnyTrainer, backend: object) -> None:
        job_spec.setdefault("spec", {})["activeDeadlineSeconds"] = self.seconds


@dataclass
class ContainerPatch:
    """Patch of one container of a pod (it must exist in the runtime)."""

    name: str
    env: list[dict[str, Any]] | None = None
    volume_mounts: list[dict[str, Any]] | None = None
    security_context: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError("Container name must be a non-empty string")
        for index, env_var in enumerate(self.env or []):
            where = f"ContainerPatch.env[{index}]"
            if not isinstance(env_var, dict) or not env_var.get("name"):
                raise ValueError(
                    f"{where}: Each env entry must have a 'name' key (a non-empty string)"
                )
            if "value" not in env_var and "valueFrom" not in env_var:
                raise ValueError(f"{where}: expected a 'value' or 'valueFrom' key")
        for index, mount in enumerate(self.volume_mounts or []):
            where = f"ContainerPatch.volume_mounts[{index}]"
            if not isinstance(mount, dict) or not mount.get("name"):
                raise ValueError(
                    f"{where}: Each volume_mounts entry must have a 'name' key (a non-empty string)"
                )
            path = mount.get("mountPath")
            if path is None:
                raise ValueError(
                    f"{where}: Each volume_mounts entry must have a 'mountPath' key "
                    "(an absolute path)"
                )
            if not isinstance(path, str) or not path.startswith("/"):
                raise ValueError(f"{where}.mountPath: expected an absolute path, got {path!r}")


@dataclass
class PodSpecPatch:
    """Patch of the pod spec fields a manager may set."""

    service_account_name: str | None = None
    volumes: list[dict[str, Any]] | None = None
    init_containers: list[ContainerPatch] | None = None
    containers: list[ContainerPatch] | None = None
    image_pull_secrets: list[dict[str, Any]] | None = None
    security_context: dict[str, Any] | None = None
    node_selector: dict[str, str] | None = None
    affinity: dict[str, Any] | None = None
    tolerations: list[dict[str, Any]] | None = None
    scheduling_gates: list[dict[str, Any]] | None = None


@dataclass
class PodTemplatePatch:
    """Patch of a pod template."""

    metadata: dict[str, Any] | None = None
    spec: PodSpecPatch | None = None


@dataclass
class JobSpecPatch:
    """Patch of a Job spec."""

    template: PodTemplatePatch | None = None


@dataclass
class JobTemplatePatch:
    """Patch of a replicated job's Job template."""

    metadata: dict[str, Any] | None = None
    spec: JobSpecPatch | None = None


@dataclass
class ReplicatedJobPatch:
    """Patch of one replicated job, by name (``node``, ``launcher``, ...)."""

    name: str
    template: JobTemplatePatch | None = None


@dataclass
class JobSetSpecPatch:
    """Patch of the JobSet spec."""

    replicated_jobs: list[ReplicatedJobPatch] | None = None


@dataclass
class JobSetTemplatePatch:
    """Patch of the JobSet template."""

    metadata: dict[str, Any] | None = None
    spec: JobSetSpecPatch | None = None


@dataclass
class TrainingRuntimeSpecPatch:
    """Patch of the training runtime spec."""

    template: JobSetTemplatePatch | None = None


@dataclass
class RuntimePatch:
    """Add a runtime patch to the TrainJob (.spec.runtimePatches), under the SDK's manager name."""

    training_runtime_spec: TrainingRuntimeSpecPatch | None = None
    manager: str = dataclasses.field(
        default=constants.RUNTIME_PATCH_MANAGER, init=False, repr=False
    )

    def __call__(self, job_spec: dict[str, Any], trainer: AnyTrainer, backend: object) -> None:
        job_spec.setdefault("spec", {}).setdefault("runtimePatches", []).append(_to_manifest(self))


def _camel_case(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(word.capitalize() for word in rest)


def _to_manifest(patch: Any) -> Any:
    """A patch dataclass as its API dict: camelCase keys, unset and empty values left out."""
    if not dataclasses.is_dataclass(patch) or isinstance(patch, type):
        return patch
    result: dict[str, Any] = {}
    for item in dataclasses.fields(patch):
        value = getattr(patch, item.name)
        if value is None:
            continue
        if isinstance(value, list):
            value = [_to_manifest(element) for element in value]
        elif dataclasses.is_dataclass(value):
            value = _to_manifest(value)
        if value == [] or value == {}:
            continue
        result[_camel_case(item.name)] = value
    return result


@dataclass
class GemsKernels:
    """Run every rank under ``gems_kernels.enable()`` (issue 27): sets ``TRAINER_GEMS=1`` in
    .spec.trainer.env, which the SDK's rank entrypoint honours. CustomTrainer only (a container
    trainer runs its own command, not the entrypoint); the runtime image needs gems-kernels."""

    enabled: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.enabled, bool):
            raise ValueError(f"GemsKernels.enabled: expected a bool, got {self.enabled!r}")

    def __call__(self, job_spec: dict[str, Any], trainer: AnyTrainer, backend: object) -> None:
        from trainer_sdk.rank_entrypoint import GEMS_ENV

        if not isinstance(trainer, CustomTrainer):
            raise ValueError(
                "GemsKernels can only be used with CustomTrainer: its ranks run the SDK's rank "
                f"entrypoint, which honours {GEMS_ENV}; got {type(trainer).__name__}"
            )
        spec = job_spec.setdefault("spec", {}).setdefault("trainer", {})
        kept = [item for item in spec.get("env") or [] if item.get("name") != GEMS_ENV]
        spec["env"] = [*kept, {"name": GEMS_ENV, "value": "1" if self.enabled else "0"}]
