"""The fine-tuned model as a Hugging Face directory: full weights (LoRA merged in) and, for LoRA,
the adapters in PEFT's format, beside the checkpoint's config and tokenizer files."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from torchtune import training
from torchtune.modules.peft import (
    get_adapter_state_dict,
    get_lora_module_names,
    get_merged_lora_ckpt,
)

__all__ = ["write_model"]


def write_model(
    checkpointer: Any,
    state: Mapping[str, torch.Tensor],
    lora: Mapping[str, Any] | None,
    adapters_only: bool,
    epoch: int,
) -> Path:
    """Write ``state`` (the whole model, torchtune's names) with ``checkpointer`` (a
    ``FullModelHFCheckpointer``); ``lora``: the model's LoRA settings, None for a full
    fine-tune. Returns the directory written."""
    checkpoint: dict[str, Any] = {}
    if lora is None:
        checkpoint[training.MODEL_KEY] = dict(state)
    else:
        checkpoint[training.ADAPTER_KEY] = get_adapter_state_dict(dict(state))
        checkpoint[training.ADAPTER_CONFIG] = {
            "r": int(lora["lora_rank"]),
            "lora_alpha": float(lora["lora_alpha"]),
            "target_modules": get_lora_module_names(
                list(_modules(lora.get("lora_attn_modules"))),
                bool(lora.get("apply_lora_to_mlp", False)),
                bool(lora.get("apply_lora_to_output", False)),
            ),
            "peft_type": "LORA",
        }
        if not adapters_only:
            checkpoint[training.MODEL_KEY] = get_merged_lora_ckpt(
                dict(state), rank=int(lora["lora_rank"]), alpha=float(lora["lora_alpha"])
            )
    checkpointer.save_checkpoint(
        checkpoint, epoch=epoch, intermediate_checkpoint=False, adapter_only=adapters_only
    )
    return Path(checkpointer._output_dir) / f"epoch_{epoch}"


def _modules(names: Sequence[str] | None) -> Sequence[str]:
    return list(names or ())
