"""TrainerClient (Kubeflow Trainer SDK compatible), local and Kubernetes backends, trainer CLI.

Every name below is imported on first use (PEP 562), so that ``import trainer_sdk`` (and the
``trainer`` command, whose ``--help`` must answer at once) loads none of the client, the backends
or the API models until something asks for them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the same names, eagerly, for type checkers
    from trainer_sdk import constants  # noqa: F401 - the module, as upstream exposes it
    from trainer_sdk.backends.kubernetes.utils import get_tpu_num_nodes
    from trainer_sdk.checkpoint.volume import CheckpointVolume
    from trainer_sdk.client import TrainerClient
    from trainer_sdk.configs import (
        ContainerBackendConfig,
        KubernetesBackendConfig,
        LocalBackendConfig,
        LocalProcessBackendConfig,
        TrainingRuntimeSource,
    )
    from trainer_sdk.constants import DATASET_PATH, MODEL_PATH
    from trainer_sdk.errors import (
        InvalidTrainJobError,
        JobFailedError,
        JobNotFoundError,
        MissingPackageError,
        RuntimeNotFoundError,
        TrainerError,
    )
    from trainer_sdk.options import (
        ActiveDeadlineSeconds,
        Annotations,
        ContainerPatch,
        JobSetSpecPatch,
        JobSetTemplatePatch,
        JobSpecPatch,
        JobTemplatePatch,
        Labels,
        Name,
        PodSpecPatch,
        PodTemplatePatch,
        ReplicatedJobPatch,
        RuntimePatch,
        TrainerArgs,
        TrainerCommand,
        TrainingRuntimeSpecPatch,
    )
    from trainer_sdk.training.metrics import MetricPoint, log_metrics
    from trainer_sdk.training.progress import update_trainjob_status
    from trainer_sdk.types import (
        DPO,
        GRPO,
        KTO,
        ORPO,
        QAT,
        BuiltinTrainer,
        ChatDataset,
        CustomTrainer,
        CustomTrainerContainer,
        DataCacheInitializer,
        DataFormat,
        DataType,
        Distillation,
        EngineSettings,
        Event,
        ExactMatchReward,
        FunctionReward,
        HuggingFaceDatasetInitializer,
        HuggingFaceModelInitializer,
        Initializer,
        LengthReward,
        LoraConfig,
        Loss,
        PreferenceDataset,
        PromptDataset,
        RegexReward,
        Runtime,
        RuntimeKind,
        RuntimeTrainer,
        S3DatasetInitializer,
        S3ModelInitializer,
        Step,
        TorchTuneConfig,
        TorchTuneInstructDataset,
        TrainerStatus,
        TrainerType,
        TrainJob,
        TrainJobTemplate,
        TRLConfig,
    )

    __version__: str

_EXPORTS: dict[str, tuple[str, ...]] = {
    "trainer_sdk.backends.kubernetes.utils": ("get_tpu_num_nodes",),
    "trainer_sdk.checkpoint.volume": ("CheckpointVolume",),
    "trainer_sdk.client": ("TrainerClient",),
    "trainer_sdk.configs": (
        "ContainerBackendConfig",
        "KubernetesBackendConfig",
        "LocalBackendConfig",
        "LocalProcessBackendConfig",
        "TrainingRuntimeSource",
    ),
    "trainer_sdk.constants": ("DATASET_PATH", "MODEL_PATH"),
    "trainer_sdk.errors": (
        "InvalidTrainJobError",
        "JobFailedError",
        "JobNotFoundError",
        "MissingPackageError",
        "RuntimeNotFoundError",
        "TrainerError",
    ),
    "trainer_sdk.training.metrics": ("MetricPoint", "log_metrics"),
    "trainer_sdk.options": (
        "ActiveDeadlineSeconds",
        "Annotations",
        "ContainerPatch",
        "JobSetSpecPatch",
        "JobSetTemplatePatch",
        "JobSpecPatch",
        "JobTemplatePatch",
        "Labels",
        "Name",
        "PodSpecPatch",
        "PodTemplatePatch",
        "ReplicatedJobPatch",
        "RuntimePatch",
        "TrainerArgs",
        "TrainerCommand",
        "TrainingRuntimeSpecPatch",
    ),
    "trainer_sdk.training.progress": ("update_trainjob_status",),
    "trainer_sdk.types": (
        "BuiltinTrainer",
        "ChatDataset",
        "CustomTrainer",
        "CustomTrainerContainer",
        "DataCacheInitializer",
        "DataFormat",
        "DataType",
        "DPO",
        "Distillation",
        "ExactMatchReward",
        "FunctionReward",
        "GRPO",
        "LengthReward",
        "PromptDataset",
        "QAT",
        "RegexReward",
        "EngineSettings",
        "Event",
        "HuggingFaceDatasetInitializer",
        "HuggingFaceModelInitializer",
        "Initializer",
        "KTO",
        "LoraConfig",
        "ORPO",
        "Loss",
        "PreferenceDataset",
        "Runtime",
        "RuntimeKind",
        "RuntimeTrainer",
        "S3DatasetInitializer",
        "S3ModelInitializer",
        "Step",
        "TorchTuneConfig",
        "TorchTuneInstructDataset",
        "TrainerStatus",
        "TRLConfig",
        "TrainerType",
        "TrainJob",
        "TrainJobTemplate",
    ),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}


def __getattr__(name: str) -> Any:
    """The exported ``name``, imported from its module the first time it is asked for."""
    if name == "__version__":
        from importlib import metadata

        value: Any = metadata.version("trainer-sdk")
    elif name == "constants":  # the constants module, as upstream exposes it
        value = importlib.import_module("trainer_sdk.constants")
    elif name in _MODULE_OF:
        value = getattr(importlib.import_module(_MODULE_OF[name]), name)
    else:
        raise AttributeError(f"module 'trainer_sdk' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names (loaded or not) and the module's own dunders; not its helpers."""
    dunders = [name for name in globals() if name.startswith("__")]
    return sorted({*dunders, *__all__, "constants"})


__all__ = [
    "DATASET_PATH",
    "DPO",
    "GRPO",
    "KTO",
    "MODEL_PATH",
    "ORPO",
    "QAT",
    "ActiveDeadlineSeconds",
    "Annotations",
    "BuiltinTrainer",
    "ChatDataset",
    "CheckpointVolume",
    "ContainerBackendConfig",
    "ContainerPatch",
    "CustomTrainer",
    "CustomTrainerContainer",
    "DataCacheInitializer",
    "DataFormat",
    "DataType",
    "Distillation",
    "EngineSettings",
    "Event",
    "ExactMatchReward",
    "FunctionReward",
    "HuggingFaceDatasetInitializer",
    "HuggingFaceModelInitializer",
    "Initializer",
    "InvalidTrainJobError",
    "JobFailedError",
    "JobNotFoundError",
    "JobSetSpecPatch",
    "JobSetTemplatePatch",
    "JobSpecPatch",
    "JobTemplatePatch",
    "KubernetesBackendConfig",
    "Labels",
    "LengthReward",
    "LocalBackendConfig",
    "LocalProcessBackendConfig",
    "LoraConfig",
    "Loss",
    "MetricPoint",
    "MissingPackageError",
    "Name",
    "PodSpecPatch",
    "PodTemplatePatch",
    "PreferenceDataset",
    "PromptDataset",
    "RegexReward",
    "ReplicatedJobPatch",
    "Runtime",
    "RuntimeKind",
    "RuntimeNotFoundError",
    "RuntimePatch",
    "RuntimeTrainer",
    "S3DatasetInitializer",
    "S3ModelInitializer",
    "Step",
    "TRLConfig",
    "TorchTuneConfig",
    "TorchTuneInstructDataset",
    "TrainJob",
    "TrainJobTemplate",
    "TrainerArgs",
    "TrainerClient",
    "TrainerCommand",
    "TrainerError",
    "TrainerStatus",
    "TrainerType",
    "TrainingRuntimeSource",
    "TrainingRuntimeSpecPatch",
    "__version__",
    "get_tpu_num_nodes",
    "log_metrics",
    "update_trainjob_status",
]
