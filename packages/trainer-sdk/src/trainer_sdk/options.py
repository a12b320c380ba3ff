"""Options for ``TrainerClient.train(options=[...])``, as in ``kubeflow.trainer.options``.

Each option edits the typed ``trainer_api.TrainJob`` (``apply``); ``train()`` applies them to one
typed job. Calling an option with a manifest dict, the trainer and a backend (Kubeflow SDK 0.5's
interface) still works: it applies the option to that dict. Plain callables of that interface are
accepted by ``train()`` too. Unlike upstream, every option works on every backend, because the
local backend runs the very TrainJob the Kubernetes backend would send.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import trainer_api

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
    "TypedOption",
    "apply_options",
    "with_options",
]

AnyTrainer = CustomTrainer | CustomTrainerContainer | BuiltinTrainer | None
_DNS_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")


class Option(Protocol):
    """What ``train(options=...)`` accepts (Kubeflow SDK 0.5's interface): edits the TrainJob
    manifest in place."""

    def __call__(self, job_spec: dict[str, Any], trainer: AnyTrainer, backend: object) -> None: ...


def _typed(manifest: dict[str, Any]) -> trainer_api.TrainJob:
    return trainer_api.TrainJob.model_validate(manifest, context=trainer_api.KEEP_UNKNOWN_FIELDS)


class TypedOption:
    """An option of the SDK's: ``apply`` edits the typed TrainJob."""

    def apply(self, job: trainer_api.TrainJob, trainer: AnyTrainer) -> None:
        """Edit ``job`` for ``trainer``; ValueError naming the option for a misuse."""
        raise NotImplementedError

    def __call__(
        self, job_spec: dict[str, Any], trainer: AnyTrainer, backend: object = None
    ) -> None:
        """Kubeflow SDK 0.5's interface: apply to the manifest ``job_spec`` in place (also a
        partial one: what it lacks is not added, beyond what the option sets)."""
        spec = job_spec.get("spec") or {}
        placeholder = "runtimeRef" not in spec
        job = _typed(
            {**job_spec, "spec": {**spec, "runtimeRef": {"name": ""}}} if placeholder else job_spec
        )
        self.apply(job, trainer)
        edited = job.to_dict()
        if placeholder:
            del edited["spec"]["runtimeRef"]
            if not edited["spec"] and "spec" not in job_spec:
                del edited["spec"]
        for key in ("apiVersion", "kind"):
            if key not in job_spec:
                del edited[key]
        job_spec.clear()
        job_spec.update(edited)


def apply_options(
    manifest: dict[str, Any], options: Sequence[Option], trainer: AnyTrainer, backend: object
) -> dict[str, Any]:
    """``manifest`` with ``options`` applied in order (``with_options``), as a manifest."""
    return with_options(manifest, options, trainer, backend).to_dict()


def with_options(
    manifest: dict[str, Any], options: Sequence[Option], trainer: AnyTrainer, backend: object
) -> trainer_api.TrainJob:
    """``manifest`` as one typed TrainJob with ``options`` applied in order (a plain callable,
    Kubeflow SDK 0.5's interface, edits its manifest form)."""
    job = _typed(manifest)
    for option in options:
        if isinstance(option, TypedOption):
            option.apply(job, trainer)
        elif callable(option):
            edited = job.to_dict()
            option(edited, trainer, backend)
            job = _typed(edited)
        else:
            raise ValueError(
                f"options: expected option objects such as Name or Labels, got {option!r}"
            )
    return job


def _metadata_of(job: trainer_api.TrainJob) -> trainer_api.ObjectMeta:
    """``job.metadata``, counted as set (so that it is written) also when it was defaulted."""
    job.metadata = job.metadata
    return job.metadata


def _trainer_of(job: trainer_api.TrainJob) -> trainer_api.Trainer:
    if job.spec.trainer is None:
        job.spec.trainer = trainer_api.Trainer()
    return job.spec.trainer


@dataclass
class Name(TypedOption):
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

    def apply(self, job: trainer_api.TrainJob, trainer: AnyTrainer) -> None:
        _metadata_of(job).name = self.name


@dataclass
class Labels(TypedOption):
    """Add labels to the TrainJob (.metadata.labels)."""

    labels: dict[str, str]

    def apply(self, job: trainer_api.TrainJob, trainer: AnyTrainer) -> None:
        metadata = _metadata_of(job)
        metadata.labels = {**(metadata.labels or {}), **self.labels}


@dataclass
class Annotations(TypedOption):
    """Add annotations to the TrainJob (.metadata.annotations)."""

    annotations: dict[str, str]

    def apply(self, job: trainer_api.TrainJob, trainer: AnyTrainer) -> None:
        metadata = _metadata_of(job)
        metadata.annotations = {**(metadata.annotations or {}), **self.annotations}


def _require_container_trainer(option: str, trainer: AnyTrainer) -> None:
    if trainer is not None and not isinstance(trainer, CustomTrainerContainer):
        raise ValueError(
            f"{option} can only be used with CustomTrainerContainer: CustomTrainer generates "
            "its own command "
            "from the function, and BuiltinTrainer uses the runtime's command"
        )


@dataclass
class TrainerCommand(TypedOption):
    """Override the trainer command (.spec.trainer.command); CustomTrainerContainer only."""

    command: list[str]

    def apply(self, job: trainer_api.TrainJob, trainer: AnyTrainer) -> None:
        _require_container_trainer("TrainerCommand", trainer)
        _trainer_of(job).command = list(self.command)


@dataclass
class TrainerArgs(TypedOption):
    """Override the trainer arguments (.spec.trainer.args); CustomTrainerContainer only."""

    args: list[str]

    def apply(self, job: trainer_api.TrainJob, trainer: AnyTrainer) -> None:
        _require_container_trainer("TrainerArgs", trainer)
        _trainer_of(job).args = list(self.args)


@dataclass
class ActiveDeadlineSeconds(TypedOption):
    """Fail the TrainJob when it runs longer than ``seconds`` (.spec.activeDeadlineSeconds)."""

    seconds: int

    def __post_init__(self) -> None:
        if type(self.seconds) is not int or self.seconds < 1:
            raise ValueError("activeDeadlineSeconds must be a positive integer (minimum 1)")

    def apply(self, job: trainer_api.TrainJob, trainer: AnyTrainer) -> None:
        job.spec.active_deadline_seconds = self.seconds


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
class RuntimePatch(TypedOption):
    """Add a runtime patch to the TrainJob (.spec.runtimePatches), under the SDK's manager name."""

    training_runtime_spec: TrainingRuntimeSpecPatch | None = None
    manager: str = dataclasses.field(
        default=constants.RUNTIME_PATCH_MANAGER, init=False, repr=False
    )

    def apply(self, job: trainer_api.TrainJob, trainer: AnyTrainer) -> None:
        patch = trainer_api.RuntimePatch.model_validate(
            _to_manifest(self), context=trainer_api.KEEP_UNKNOWN_FIELDS
        )
        job.spec.runtime_patches = [*(job.spec.runtime_patches or []), patch]


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
class GemsKernels(TypedOption):
    """Run every rank under ``gems_kernels.enable()`` (issue 27): sets ``TRAINER_GEMS=1`` in
    .spec.trainer.env, which the SDK's rank entrypoint honours. CustomTrainer only (a container
    trainer runs its own command, not the entrypoint); the runtime image needs gems-kernels."""

    enabled: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.enabled, bool):
            raise ValueError(f"GemsKernels.enabled: expected a bool, got {self.enabled!r}")

    def apply(self, job: trainer_api.TrainJob, trainer: AnyTrainer) -> None:
        from trainer_sdk.training.rank_entrypoint import GEMS_ENV

        if not isinstance(trainer, CustomTrainer):
            raise ValueError(
                "GemsKernels can only be used with CustomTrainer: its ranks run the SDK's rank "
                f"entrypoint, which honours {GEMS_ENV}; got {type(trainer).__name__}"
            )
        spec = _trainer_of(job)
        kept = [item for item in spec.env or [] if item.name != GEMS_ENV]
        spec.env = [*kept, trainer_api.EnvVar(name=GEMS_ENV, value="1" if self.enabled else "0")]
