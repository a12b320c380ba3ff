"""The torchtune engine: ``TorchTuneConfig`` -> ``tune run`` overrides (upstream's call).

Submit side (this module, pure): the TrainJob's command is ``tune run`` (upstream's; the runtime
framework's Torch plugin completes it with this engine's recipe and the config for the runtime's
model and the job's shape) and its args are torchtune config overrides (``key=value``): upstream's
fields as upstream renders them, then ``EngineSettings`` under the recipe's keys, then
``overrides``, whose top-level keys must be ones the recipe reads (``RECIPE_KEYS``).
Pod side: the runtime runs ``tune`` itself (``commands``), which runs ``recipe`` (torchtune's
components; ``families``, ``placement``, ``outputs``), written against ``TORCHTUNE_VERSION``;
``tiny_model`` writes tiny models of the families, as their checkpoints are.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlparse

from trainer_sdk import constants, types
from trainer_sdk.errors import InvalidTrainJobError
from trainer_sdk.manifests import storage
from trainer_sdk.training.engines.base import EngineTrainer
from trainer_sdk.training.engines.settings import field_error, setting_errors

if TYPE_CHECKING:
    from trainer_api import FieldError

__all__ = ["ENGINE", "RECIPE_KEYS", "TORCHTUNE_VERSION", "UNSUPPORTED_SETTINGS", "TorchTune"]

# The torchtune release the recipe is written and tested against (trainer-sdk[torchtune] pins it).
TORCHTUNE_VERSION: Final = "0.6.1"
COMMAND: Final = ["tune", "run"]
# Top-level config keys the recipe reads: those of torchtune's LLM fine-tuning configs, and its
# own max_steps (a cap on optimizer steps over all epochs) and save_every_n_steps.
RECIPE_KEYS: Final = frozenset(
    {
        "batch_size",
        "checkpointer",
        "clip_grad_norm",
        "collate_fn",
        "compile",
        "cudnn_deterministic_mode",
        "custom_sharded_layers",
        "dataset",
        "device",
        "dtype",
        "enable_activation_checkpointing",
        "enable_activation_offloading",
        "epochs",
        "fsdp_cpu_offload",
        "fsdp_reshard_after_forward",
        "gradient_accumulation_steps",
        "log_every_n_steps",
        "log_peak_memory_stats",
        "loss",
        "lr_scheduler",
        "max_steps",
        "max_steps_per_epoch",
        "metric_logger",
        "model",
        "optimizer",
        "optimizer_in_bwd",
        "output_dir",
        "profiler",
        "resume_from_checkpoint",
        "save_adapter_weights_only",
        "save_every_n_steps",
        "seed",
        "shuffle",
        "tokenizer",
    }
)
# Keys of torchtune's configs the recipe accepts only when false, and why.
UNSUPPORTED_SETTINGS: Final = {
    "optimizer_in_bwd": "must be false: the recipe steps the optimizer after backward",
    "enable_activation_offloading": "must be false: the recipe does not offload activations",
    "profiler.enabled": "must be false: the recipe does not run torchtune's profiler",
    "resume_from_checkpoint": (
        "must be false: the recipe resumes by itself from the job's latest checkpoint"
    ),
}
# EngineSettings -> the recipe's config keys.
_KEYS: Final = {
    "learning_rate": "optimizer.lr",
    "max_steps": "max_steps",
    "gradient_accumulation_steps": "gradient_accumulation_steps",
    "max_seq_len": "tokenizer.max_seq_len",
    "device": "device",
    "save_steps": "save_every_n_steps",
    "seed": "seed",
}
_LORA_FIELDS: Final = (
    "apply_lora_to_mlp",
    "apply_lora_to_output",
    "lora_rank",
    "lora_alpha",
    "lora_dropout",
    "quantize_base",
    "use_dora",
)


def _dataset_args(storage_uri: str) -> list[str]:
    """Where torchtune finds the data set the initializer wrote: a repository's sub-path or a
    local file as ``dataset.data_files``, a whole repository or directory as ``data_dir``; a
    local file's format from its suffix (upstream's ``source`` field, given, comes later)."""
    path = storage.local_path(storage_uri)
    if path is not None:
        relative = path.name if path.suffix else "."
    else:
        parts = urlparse(storage.trainjob_uri(storage_uri)).path.strip("/").split("/")
        relative = "/".join(parts[1:]) if len(parts) > 1 else "."
    key = "dataset.data_files" if relative != "." and "." in relative else "dataset.data_dir"
    args = [f"{key}={os.path.join(constants.DATASET_PATH, relative)}"]
    if path is not None and path.suffix in storage.DATA_SOURCES:
        args.append(f"dataset.source={storage.DATA_SOURCES[path.suffix]}")
    return args


def _upstream_args(
    config: types.TorchTuneConfig, initializer: types.Initializer | None
) -> list[str]:
    """Upstream's fields as kubeflow 0.5 renders them."""
    args: list[str] = []
    if config.dtype:
        args.append(f"dtype={config.dtype.value}")
    if config.batch_size:
        args.append(f"batch_size={config.batch_size}")
    if config.epochs:
        args.append(f"epochs={config.epochs}")
    if config.loss:
        args.append(f"loss={config.loss.value}")
    if initializer and isinstance(initializer.dataset, types.HuggingFaceDatasetInitializer):
        args += _dataset_args(initializer.dataset.storage_uri)
    if (peft := config.peft_config) is not None:
        args += [
            f"model.{name}={value}"
            for name in _LORA_FIELDS
            if (value := getattr(peft, name)) is not None
        ]
        if peft.lora_attn_modules:
            args.append(f"model.lora_attn_modules=[{','.join(peft.lora_attn_modules)}]")
    if (dataset := config.dataset_preprocess_config) is not None:
        args.append(f"dataset={constants.TORCH_TUNE_INSTRUCT_DATASET}")
        if dataset.source:
            args.append(f"dataset.source={dataset.source.value}")
        if dataset.split:
            args.append(f"dataset.split={dataset.split}")
        if dataset.train_on_input is not None:
            args.append(f"dataset.train_on_input={dataset.train_on_input}")
        if dataset.new_system_prompt:
            args.append(f"dataset.new_system_prompt={dataset.new_system_prompt}")
        if dataset.column_map:
            args.append(f"dataset.column_map={dataset.column_map}")
    return args


def _override_errors(overrides: Mapping[str, Any], where: str) -> list[FieldError]:
    """One error per override the recipe would refuse: a top-level key it does not read, or a
    setting it supports only when off."""
    errors = []
    for key, value in overrides.items():
        top = key.split(".", 1)[0]
        if top not in RECIPE_KEYS:
            errors.append(
                field_error(
                    f"{where}[{key!r}]",
                    f"the torchtune recipe reads no {top!r}; its keys are {sorted(RECIPE_KEYS)}",
                )
            )
        elif key in UNSUPPORTED_SETTINGS and value:
            errors.append(field_error(f"{where}[{key!r}]", UNSUPPORTED_SETTINGS[key]))
    return errors


def _value(value: Any) -> str:
    """An override's value as torchtune's command line parses it (YAML): strings as they are,
    anything else as JSON (``true``, ``null``, ``[q_proj, v_proj]`` lists, mappings)."""
    return value if isinstance(value, str) else json.dumps(value)


class TorchTune:
    """``BuiltinTrainer(TorchTuneConfig(...))`` on a ``torchtune-*`` runtime."""

    name = types.TORCH_TUNE
    config_type = types.TorchTuneConfig
    module = "torchtune"
    install = 'pip install "trainer-sdk[torchtune]"'
    # Locally, ``tune run`` of the recipe starts one interpreter per node (see ``local_tune``).
    commands: Mapping[str, str] = MappingProxyType(
        {"tune": "trainer_sdk.training.engines.torchtune.local_tune"}
    )

    def trainer(
        self, config: types.TorchTuneConfig, initializer: types.Initializer | None
    ) -> EngineTrainer:
        """``tune run`` and its overrides; InvalidTrainJobError names each bad field."""
        where = "TorchTuneConfig"
        errors = setting_errors(config, where)
        if isinstance(config.overrides, dict):
            errors += _override_errors(config.overrides, f"{where}.overrides")
        dataset = config.dataset_preprocess_config
        if dataset is not None and not isinstance(dataset, types.TorchTuneInstructDataset):
            errors.append(
                field_error(
                    f"{where}.dataset_preprocess_config",
                    f"expected a TorchTuneInstructDataset, got {type(dataset).__name__}",
                )
            )
        if errors:
            raise InvalidTrainJobError(errors)
        args = _upstream_args(config, initializer)
        args += [
            f"{key}={value}"
            for name, key in _KEYS.items()
            if (value := getattr(config, name)) is not None
        ]
        args += [f"{key}={_value(value)}" for key, value in (config.overrides or {}).items()]
        return EngineTrainer(command=list(COMMAND), args=args)

    def run(self, args: Sequence[str]) -> int:
        """torchtune's runtimes run ``tune run`` (``commands``), never this entrypoint."""
        raise NotImplementedError(
            "the torchtune runtimes run `tune run RECIPE --config CONFIG` (the runtime "
            "framework's Torch plugin builds it), not `python -m trainer_sdk.training.engines`"
        )


ENGINE: Final = TorchTune()
