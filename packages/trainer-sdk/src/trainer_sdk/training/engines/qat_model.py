"""Quantization-aware training with torchao, pod side: a model's linear layers are prepared
(fake-quantized: they train in float, seeing the scheme's rounding in every forward pass),
trained, converted to the scheme's quantized weights, and written; ``load_quantized`` loads it.

The converted model is written as its config, tokenizer and a ``torch.save`` state dict of the
quantized tensors (``quantized.pt``), with ``qat.json`` naming the scheme: ``save_pretrained``
cannot write torchao's tensor subclasses (safetensors reads their storage: ``Attempted to access
the data pointer on an invalid python storage``). Writing the quantized tensors, rather than the
float weights to quantize at load, keeps what was measured after training bit for bit what
loads. The output layer of a model with tied word embeddings is quantized like any linear layer;
its embedding stays float, so the written model has them untied.

    from trainer_sdk.training.engines.qat_model import load_quantized
    model = load_quantized("<output>/model")
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

import torch
from torchao.quantization import (
    Int8DynamicActivationIntxWeightConfig,
    IntxWeightOnlyConfig,
    quantize_,
)
from torchao.quantization.granularity import PerGroup
from torchao.quantization.qat import QATConfig
from transformers import AutoConfig, AutoModelForCausalLM

__all__ = ["SCHEME_FILE", "WEIGHTS_FILE", "convert", "load_quantized", "prepare", "write"]

SCHEME_FILE: Final = "qat.json"
WEIGHTS_FILE: Final = "quantized.pt"
_INT4: Final = torch.int4  # type: ignore[attr-defined]  # a dtype torch's stubs lack


def _base_config(scheme: str, group_size: int) -> Any:
    """torchao's quantization config of ``scheme`` (``qat.SCHEMES``)."""
    if scheme == "int8-dynamic-act-int4-weight":
        return Int8DynamicActivationIntxWeightConfig(
            weight_dtype=_INT4, weight_granularity=PerGroup(group_size)
        )
    if scheme == "int4-weight-only":
        return IntxWeightOnlyConfig(weight_dtype=_INT4, granularity=PerGroup(group_size))
    raise ValueError(f"--qat_scheme: unknown scheme {scheme!r}")


def prepare(model: torch.nn.Module, scheme: str, group_size: int) -> torch.nn.Module:
    """Fake-quantize ``model``'s linear layers in place; ValueError when ``group_size`` does not
    divide a layer's input size."""
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.Linear) and module.in_features % group_size:
            raise ValueError(
                f"--qat_group_size: {group_size} does not divide the input size "
                f"{module.in_features} of {name}"
            )
    quantize_(model, QATConfig(_base_config(scheme, group_size), step="prepare"))
    return model


def convert(model: torch.nn.Module, scheme: str, group_size: int) -> torch.nn.Module:
    """Replace the prepared layers' float weights with their quantized ones, in place."""
    quantize_(model, QATConfig(_base_config(scheme, group_size), step="convert"))
    return model


def write(model: Any, tokenizer: Any, directory: Path, scheme: str, group_size: int) -> None:
    """Write a converted ``model`` (a ``PreTrainedModel``) and ``tokenizer`` into ``directory``."""
    model.config.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    torch.save(model.state_dict(), directory / WEIGHTS_FILE)
    scheme_text = json.dumps({"scheme": scheme, "group_size": group_size})
    (directory / SCHEME_FILE).write_text(scheme_text + "\n", encoding="utf-8")


def load_quantized(directory: str | Path) -> Any:
    """The converted model ``write`` wrote into ``directory``, in eval mode."""
    directory = Path(directory)
    scheme = json.loads((directory / SCHEME_FILE).read_text(encoding="utf-8"))
    config = AutoConfig.from_pretrained(directory)
    model = AutoModelForCausalLM.from_config(config)  # type: ignore[no-untyped-call]
    quantize_(model, _base_config(scheme["scheme"], scheme["group_size"]))
    state = torch.load(directory / WEIGHTS_FILE, weights_only=True)
    model.load_state_dict(state, assign=True)
    return model.eval()
