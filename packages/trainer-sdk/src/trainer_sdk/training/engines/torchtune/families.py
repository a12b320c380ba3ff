"""Model families: a checkpoint directory's ``config.json`` -> torchtune's component builders.

A torchtune config names its model by a builder of fixed size (``llama3_2.lora_llama3_2_1b``).
Here the builder only says which family the model is; its dimensions come from the checkpoint's
``config.json`` (Hugging Face's fields), so a tiny model of the family and the real one load the
same way, and a checkpoint that the family cannot represent is refused naming the field.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from torch import nn
from torchtune.models.llama3._tokenizer import LLAMA3_SPECIAL_TOKENS
from torchtune.models.llama3_1 import llama3_1, lora_llama3_1
from torchtune.models.llama3_2 import llama3_2, lora_llama3_2
from torchtune.models.qwen2 import lora_qwen2, qwen2
from torchtune.models.qwen2_5._tokenizer import QWEN2_5_SPECIAL_TOKENS

__all__ = [
    "FAMILIES",
    "LORA_ARGUMENTS",
    "CheckpointError",
    "Family",
    "build_model",
    "checkpoint_special_tokens",
    "family_of",
    "lora_settings",
    "read_config",
    "weight_files",
]

# What a LoRA builder takes besides the dimensions (torchtune's names), and its defaults.
LORA_ARGUMENTS: Final[Mapping[str, object]] = {
    "lora_attn_modules": [],
    "apply_lora_to_mlp": False,
    "apply_lora_to_output": False,
    "lora_rank": 8,
    "lora_alpha": 16.0,
    "lora_dropout": 0.0,
    "use_dora": False,
    "quantize_base": False,
}


class CheckpointError(ValueError):
    """The checkpoint directory holds a model this family cannot represent."""


def _require(config: Mapping[str, Any], key: str, expected: object) -> None:
    if config.get(key, expected) != expected:
        raise CheckpointError(f"config.json: {key} is {config[key]!r}; expected {expected!r}")


def _rope(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """RoPE settings under either spelling (``rope_scaling`` + ``rope_theta``, or transformers
    5's ``rope_parameters``)."""
    merged = dict(config.get("rope_scaling") or {})
    merged.update(config.get("rope_parameters") or {})
    if "rope_theta" in config:
        merged.setdefault("rope_theta", config["rope_theta"])
    return merged


def _dimensions(config: Mapping[str, Any]) -> dict[str, Any]:
    """The builder arguments every family shares."""
    heads = int(config["num_attention_heads"])
    embed_dim = int(config["hidden_size"])
    head_dim = config.get("head_dim") or embed_dim // heads
    if head_dim * heads != embed_dim:
        raise CheckpointError(
            f"config.json: head_dim {head_dim} x num_attention_heads {heads} must equal "
            f"hidden_size {embed_dim} (torchtune derives head_dim from them)"
        )
    return {
        "vocab_size": int(config["vocab_size"]),
        "num_layers": int(config["num_hidden_layers"]),
        "num_heads": heads,
        "num_kv_heads": int(config.get("num_key_value_heads") or heads),
        "embed_dim": embed_dim,
        "intermediate_dim": int(config["intermediate_size"]),
        "max_seq_len": int(config["max_position_embeddings"]),
        "norm_eps": float(config["rms_norm_eps"]),
        "tie_word_embeddings": bool(config.get("tie_word_embeddings", False)),
    }


def _llama3_arguments(config: Mapping[str, Any], family: str) -> dict[str, Any]:
    """Llama 3's: scaled RoPE, no biases."""
    expected: object
    for key, expected in (
        ("model_type", "llama"),
        ("hidden_act", "silu"),
        ("attention_bias", False),
        ("mlp_bias", False),
    ):
        _require(config, key, expected)
    rope = _rope(config)
    # torchtune's Llama3ScaledRoPE fixes everything but the factor.
    for key, expected in (
        ("rope_type", "llama3"),
        ("low_freq_factor", 1.0),
        ("high_freq_factor", 4.0),
        ("original_max_position_embeddings", 8192),
    ):
        if rope.get(key) != expected:
            raise CheckpointError(
                f"config.json: rope_scaling.{key} is {rope.get(key)!r}; the {family} family "
                f"needs {expected!r}"
            )
    return {
        **_dimensions(config),
        "rope_base": int(rope.get("rope_theta", 500_000)),
        "scale_factor": int(rope["factor"]),
    }


def _llama3_2_arguments(config: Mapping[str, Any]) -> dict[str, Any]:
    return _llama3_arguments(config, "llama3_2")


def _llama3_3_arguments(config: Mapping[str, Any]) -> dict[str, Any]:
    """Llama 3.3 is Llama 3.1's architecture, whose builders take no tied embeddings."""
    _require(config, "tie_word_embeddings", False)
    arguments = _llama3_arguments(config, "llama3_3")
    del arguments["tie_word_embeddings"]
    return arguments


def _qwen2_arguments(config: Mapping[str, Any]) -> dict[str, Any]:
    _require(config, "model_type", "qwen2")
    _require(config, "hidden_act", "silu")
    _require(config, "use_sliding_window", False)
    rope = _rope(config)
    if rope.get("rope_type", "default") != "default":
        raise CheckpointError(
            f"config.json: rope_scaling.rope_type is {rope['rope_type']!r}; the qwen2_5 family "
            "needs plain RoPE"
        )
    return {**_dimensions(config), "rope_base": float(rope.get("rope_theta", 1_000_000.0))}


@dataclass(frozen=True)
class Family:
    """One model family: how torchtune builds, converts and tokenizes it."""

    name: str
    component_prefix: str  # the module of its fixed-size builders in torchtune configs
    model_type: str  # FullModelHFCheckpointer's weight conversion
    build: Callable[..., nn.Module]
    build_lora: Callable[..., nn.Module]
    arguments: Callable[[Mapping[str, Any]], dict[str, Any]]
    special_tokens: Mapping[str, int]  # torchtune's canonical table


FAMILIES: Final = (
    Family(
        "llama3_2",
        "torchtune.models.llama3_2.",
        "LLAMA3_2",
        llama3_2,
        lora_llama3_2,
        _llama3_2_arguments,
        LLAMA3_SPECIAL_TOKENS,
    ),
    Family(
        "llama3_3",
        "torchtune.models.llama3_3.",
        "LLAMA3",
        llama3_1,
        lora_llama3_1,
        _llama3_3_arguments,
        LLAMA3_SPECIAL_TOKENS,
    ),
    Family(
        "qwen2_5",
        "torchtune.models.qwen2_5.",
        "QWEN2",
        qwen2,
        lora_qwen2,
        _qwen2_arguments,
        QWEN2_5_SPECIAL_TOKENS,
    ),
)


def family_of(component: str) -> Family:
    """The family of a model builder's dotted path (``torchtune.models.qwen2_5.qwen2_5_1_5b``)."""
    for family in FAMILIES:
        if component.startswith(family.component_prefix):
            return family
    known = ", ".join(f"{family.component_prefix}*" for family in FAMILIES)
    raise CheckpointError(f"model._component_: {component!r} is none of the families {known}")


def read_config(checkpoint_dir: str | Path) -> dict[str, Any]:
    """The checkpoint's ``config.json``."""
    path = Path(checkpoint_dir) / "config.json"
    if not path.is_file():
        raise CheckpointError(f"{path}: missing; the model directory must be a Hugging Face one")
    loaded: dict[str, Any] = json.loads(path.read_text())
    return loaded


def weight_files(checkpoint_dir: str | Path) -> list[str]:
    """The checkpoint's weight files: those its index names, else every safetensors file."""
    directory = Path(checkpoint_dir)
    index = directory / "model.safetensors.index.json"
    if index.is_file():
        return sorted(set(json.loads(index.read_text())["weight_map"].values()))
    found = sorted(path.name for path in directory.glob("*.safetensors"))
    if not found:
        raise CheckpointError(f"{directory}: no safetensors weights (nor their index)")
    return found


def lora_settings(model: Mapping[str, Any]) -> dict[str, Any] | None:
    """A model config's LoRA arguments, every one of ``LORA_ARGUMENTS`` (None: it adapts
    nothing, a full fine-tune); torchtune's ``qlora_*`` builders quantize the base unless the
    config says otherwise."""
    given = {key: value for key, value in model.items() if key != "_component_"}
    unknown = sorted(set(given) - set(LORA_ARGUMENTS))
    if unknown:
        raise CheckpointError(
            f"model: unknown keys {unknown}; expected some of {list(LORA_ARGUMENTS)}"
        )
    if str(model["_component_"]).rsplit(".", 1)[-1].startswith("qlora_"):
        given.setdefault("quantize_base", True)
    settings = {**LORA_ARGUMENTS, **given}
    adapted = settings["lora_attn_modules"] or settings["apply_lora_to_mlp"]
    return settings if adapted or settings["apply_lora_to_output"] else None


def build_model(
    family: Family, config: Mapping[str, Any], lora: Mapping[str, Any] | None
) -> nn.Module:
    """The family's model with ``config.json``'s dimensions; with ``lora`` (``lora_settings``),
    its LoRA model."""
    dimensions = family.arguments(config)
    return family.build(**dimensions) if lora is None else family.build_lora(**lora, **dimensions)


def checkpoint_special_tokens(family: Family, checkpoint_dir: str | Path) -> dict[str, int] | None:
    """The special tokens' ids from the checkpoint's ``tokenizer.json`` when it names every token
    of torchtune's canonical table for the family (a small model keeps a small vocabulary);
    None (torchtune's table) otherwise: Llama 3.2's own file lacks some that torchtune reads."""
    path = Path(checkpoint_dir) / "tokenizer.json"
    if not path.is_file():
        return None
    added = json.loads(path.read_text()).get("added_tokens") or []
    ids = {str(token["content"]): int(token["id"]) for token in added}
    if not set(family.special_tokens) <= set(ids):
        return None
    return {name: ids[name] for name in family.special_tokens}
