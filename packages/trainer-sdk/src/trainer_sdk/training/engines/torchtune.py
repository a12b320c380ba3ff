"""The torchtune engine: ``TorchTuneConfig`` -> ``tune run`` overrides (upstream's call).

Submit side: the TrainJob's command is ``tune run`` (upstream's; the runtime framework's Torch
plugin completes it with the recipe and config for the runtime's model and the job's shape) and
its args are torchtune config overrides (``key=value``): upstream's fields as upstream renders
them, then ``EngineSettings`` under torchtune's keys, then ``overrides`` as given.
Pod side: the runtime runs ``tune`` itself (``commands``), not ``run``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Final
from urllib.parse import urlparse

from trainer_sdk import constants, types
from trainer_sdk.errors import InvalidTrainJobError
from trainer_sdk.manifests import storage
from trainer_sdk.training.engines.base import EngineTrainer
from trainer_sdk.training.engines.settings import field_error, setting_errors

__all__ = ["ENGINE", "TorchTune"]

COMMAND: Final = ["tune", "run"]
# EngineSettings -> torchtune config keys.
_KEYS: Final = {
    "learning_rate": "optimizer.lr",
    "max_steps": "max_steps_per_epoch",
    "gradient_accumulation_steps": "gradient_accumulation_steps",
    "max_seq_len": "tokenizer.max_seq_len",
    "device": "device",
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


def _dataset_arg(storage_uri: str) -> str:
    """Where torchtune finds the data set the initializer wrote: a repository's sub-path or a
    local file as ``dataset.data_files``, a whole repository or directory as ``data_dir``."""
    path = storage.local_path(storage_uri)
    if path is not None:
        relative = path.name if path.suffix else "."
    else:
        parts = urlparse(storage.trainjob_uri(storage_uri)).path.strip("/").split("/")
        relative = "/".join(parts[1:]) if len(parts) > 1 else "."
    key = "dataset.data_files" if relative != "." and "." in relative else "dataset.data_dir"
    return f"{key}={os.path.join(constants.DATASET_PATH, relative)}"


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
        args.append(_dataset_arg(initializer.dataset.storage_uri))
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


class TorchTune:
    """``BuiltinTrainer(TorchTuneConfig(...))`` on a ``torchtune-*`` runtime."""

    name = types.TORCH_TUNE
    config_type = types.TorchTuneConfig
    module = "torchtune"
    install = 'pip install "trainer-sdk[torchtune]"'
    commands: Mapping[str, str] = MappingProxyType({"tune": "torchtune._cli.tune"})

    def trainer(
        self, config: types.TorchTuneConfig, initializer: types.Initializer | None
    ) -> EngineTrainer:
        """``tune run`` and its overrides; InvalidTrainJobError names each bad field."""
        where = "TorchTuneConfig"
        errors = setting_errors(config, where)
        if config.save_steps is not None:
            errors.append(
                field_error(
                    f"{where}.save_steps",
                    "torchtune's recipes checkpoint at the end of each epoch; leave it unset",
                )
            )
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
        args += [f"{key}={value}" for key, value in (config.overrides or {}).items()]
        return EngineTrainer(command=list(COMMAND), args=args)

    def run(self, args: Sequence[str]) -> int:
        """torchtune's runtimes run ``tune run`` (``commands``), never this entrypoint."""
        raise NotImplementedError(
            "the torchtune runtimes run `tune run RECIPE --config CONFIG` (the runtime "
            "framework's Torch plugin builds it), not `python -m trainer_sdk.training.engines`"
        )


ENGINE: Final = TorchTune()
