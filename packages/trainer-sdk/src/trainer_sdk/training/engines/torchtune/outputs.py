"""The fine-tuned model in the engines' output layout (``training.engines.outputs``):
``<output>/model`` (the whole model, LoRA merged in, with the checkpoint's config and tokenizer
files) and, after LoRA, ``<output>/adapter`` (the adapter in PEFT's format, and the tokenizer).

torchtune's ``FullModelHFCheckpointer`` converts the weights to Hugging Face's names and copies
the checkpoint's other files; it writes them into a staging directory, from which each output
directory is put in place whole.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

import torch
from torchtune import training
from torchtune.modules.peft import (
    get_adapter_state_dict,
    get_lora_module_names,
    get_merged_lora_ckpt,
)

from trainer_sdk.training.engines.outputs import ADAPTER, MODEL, write_atomically

__all__ = ["STAGING", "write_model"]

STAGING: Final = ".torchtune"  # under the output directory: where the checkpointer writes
_ADAPTER_FILES: Final = ("adapter_model.safetensors", "adapter_config.json")
_MODEL_ONLY: Final = ("config.json", "generation_config.json", "model.safetensors.index.json")


def _adapter_config(lora: Mapping[str, Any]) -> dict[str, Any]:
    modules = get_lora_module_names(
        list(lora["lora_attn_modules"]), lora["apply_lora_to_mlp"], lora["apply_lora_to_output"]
    )
    return {
        "r": lora["lora_rank"],
        "lora_alpha": lora["lora_alpha"],
        "target_modules": modules,
        "peft_type": "LORA",
    }


def _place(paths: Iterable[Path], into: Path, *, keep: bool = False) -> None:
    """Move ``paths`` into ``into`` (copy them with ``keep``)."""
    for path in paths:
        if not keep:
            shutil.move(path, into / path.name)
        elif path.is_dir():
            shutil.copytree(path, into / path.name)
        else:
            shutil.copy2(path, into / path.name)


def write_model(
    checkpointer: Any,
    state: Mapping[str, torch.Tensor],
    lora: Mapping[str, Any] | None,
    output: Path,
    adapters_only: bool = False,
) -> list[Path]:
    """Write ``state`` (the whole model under torchtune's names) with ``checkpointer`` (a
    ``FullModelHFCheckpointer`` whose output directory is ``output / STAGING``); ``lora``: the
    model's LoRA settings, None after a full fine-tune. Returns the directories written."""
    checkpoint: dict[str, Any] = {}
    if lora is not None:
        checkpoint[training.ADAPTER_KEY] = get_adapter_state_dict(dict(state))
        checkpoint[training.ADAPTER_CONFIG] = _adapter_config(lora)
    if lora is None:
        checkpoint[training.MODEL_KEY] = dict(state)
    elif not adapters_only:
        checkpoint[training.MODEL_KEY] = get_merged_lora_ckpt(
            dict(state), rank=lora["lora_rank"], alpha=lora["lora_alpha"]
        )
    staging = output / STAGING
    shutil.rmtree(staging / "epoch_0", ignore_errors=True)
    checkpointer.save_checkpoint(
        checkpoint, epoch=0, adapter_only=lora is not None and adapters_only
    )
    written = staging / "epoch_0"
    files = sorted(written.iterdir())
    weights = [path for path in files if path.name.startswith("model-")]
    adapter = [path for path in files if path.name in _ADAPTER_FILES]
    shared = [
        path
        for path in files
        if path not in weights and path not in adapter and not path.name.startswith("adapter_")
    ]
    tokenizer = [path for path in shared if path.name not in _MODEL_ONLY]

    def write_adapter(directory: Path) -> None:
        _place(adapter, directory)
        _place(tokenizer, directory, keep=True)

    directories = []
    if lora is not None:
        directories.append(write_atomically(output / ADAPTER, write_adapter))
    if training.MODEL_KEY in checkpoint:
        directories.append(write_atomically(output / MODEL, lambda d: _place(weights + shared, d)))
    shutil.rmtree(staging)
    return directories
