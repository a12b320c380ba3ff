"""Tiny models of the torchtune runtimes' families, written as their Hugging Face checkpoints are:
for trying the torchtune engine, its tests, benchmark and image smoke without a model hub.

    python -m trainer_sdk.training.engines.torchtune.tiny_model DIR [--family llama3_2|qwen2_5]

It needs torchtune's environment only (no transformers). The directory is what the model
initializer puts on the volume for the real model: ``config.json`` with the fields the real
checkpoint's has (``rope_theta``, ``rope_scaling``), ``model.safetensors`` under Hugging Face's
names (torchtune's conversion), ``tokenizer.json`` (a byte-level BPE without merges whose added
tokens are torchtune's special tokens for the family, numbered after the 256 bytes), and the
family's own tokenizer files: Llama's tiktoken ``original/tokenizer.model``, Qwen's
``vocab.json`` and ``merges.txt``. The bytes have the same ids in every file, so transformers and
torchtune read text the same way.
"""

from __future__ import annotations

import argparse
import base64
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

__all__ = ["FAMILIES", "byte_alphabet", "tiny_config", "write_tiny_model"]

FAMILIES: Final = ("llama3_2", "qwen2_5")
# GPT-2's byte-level alphabet: printable bytes stand for themselves, the rest for 256 upwards.
_PRINTABLE: Final = [*range(33, 127), *range(161, 173), *range(174, 256)]
# Square attention projections and MLP weights of a multiple of 64 x 256 elements: QLoRA's NF4
# quantizes blocks of 64 values whose scales it quantizes again in blocks of 256.
_DIMENSIONS: Final[dict[str, Any]] = {
    "hidden_size": 128,
    "intermediate_size": 256,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 512,
    "tie_word_embeddings": True,
    "hidden_act": "silu",
    "torch_dtype": "float32",
}
# Weights large enough for attention to be sharp: positions (RoPE) then change the logits.
_INITIAL_STD: Final = 0.2


def byte_alphabet() -> dict[int, str]:
    """Byte -> the character byte-level BPE vocabularies spell it with."""
    extra = iter(range(256, 512))
    return {byte: chr(byte if byte in _PRINTABLE else next(extra)) for byte in range(256)}


def _special_tokens(family: str) -> dict[str, int]:
    """torchtune's special tokens of ``family``, renumbered after the 256 bytes in their order."""
    from torchtune.models.llama3._tokenizer import LLAMA3_SPECIAL_TOKENS
    from torchtune.models.qwen2_5._tokenizer import QWEN2_5_SPECIAL_TOKENS

    table = LLAMA3_SPECIAL_TOKENS if family == "llama3_2" else QWEN2_5_SPECIAL_TOKENS
    names = sorted(table, key=table.__getitem__)
    return {name: 256 + index for index, name in enumerate(names)}


def tiny_config(family: str) -> dict[str, Any]:
    """The ``config.json`` of the tiny model of ``family``."""
    if family not in FAMILIES:
        raise ValueError(f"family: expected one of {list(FAMILIES)}, got {family!r}")
    special = _special_tokens(family)
    if family == "llama3_2":
        return {
            "architectures": ["LlamaForCausalLM"],
            "model_type": "llama",
            "vocab_size": 256 + len(special),
            "head_dim": _DIMENSIONS["hidden_size"] // _DIMENSIONS["num_attention_heads"],
            "rms_norm_eps": 1e-5,
            "rope_theta": 500_000.0,
            "rope_scaling": {  # Llama 3.2's
                "rope_type": "llama3",
                "factor": 32.0,
                "low_freq_factor": 1.0,
                "high_freq_factor": 4.0,
                "original_max_position_embeddings": 8192,
            },
            "attention_bias": False,
            "mlp_bias": False,
            "bos_token_id": special["<|begin_of_text|>"],
            "eos_token_id": special["<|eot_id|>"],
            **_DIMENSIONS,
        }
    return {
        "architectures": ["Qwen2ForCausalLM"],
        "model_type": "qwen2",
        "vocab_size": 256 + len(special),
        "rms_norm_eps": 1e-6,
        "rope_theta": 1_000_000.0,
        "use_sliding_window": False,
        "bos_token_id": special["<|endoftext|>"],
        "eos_token_id": special["<|im_end|>"],
        **_DIMENSIONS,
    }


def _tokenizer_json(special: Mapping[str, int], directory: Path) -> None:
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    alphabet = byte_alphabet()
    tokenizer = Tokenizer(models.BPE(vocab={alphabet[b]: b for b in range(256)}, merges=[]))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens(
        [AddedToken(name, special=True) for name in sorted(special, key=special.__getitem__)]
    )
    tokenizer.save(str(directory / "tokenizer.json"))


def _weights(family: str, config: Mapping[str, Any], seed: int) -> dict[str, Any]:
    """Random weights of the model ``config`` describes, under Hugging Face's names."""
    import torch
    from torchtune.models.convert_weights import tune_to_hf
    from torchtune.models.qwen2 import qwen2_tune_to_hf

    from trainer_sdk.training.engines.torchtune import families

    (builder,) = [known for known in families.FAMILIES if known.name == family]
    torch.manual_seed(seed)
    model = builder.build(**builder.arguments(config))
    with torch.no_grad():
        for parameter in model.parameters():
            if parameter.dim() > 1:  # norms keep their ones
                parameter.normal_(0.0, _INITIAL_STD)
    shape = {
        "num_heads": config["num_attention_heads"],
        "num_kv_heads": config["num_key_value_heads"],
        "dim": config["hidden_size"],
    }
    state = model.state_dict()
    if family == "qwen2_5":
        converted: dict[str, Any] = qwen2_tune_to_hf(
            state, **shape, tie_word_embeddings=config["tie_word_embeddings"]
        )
    else:
        converted = tune_to_hf(state, **shape)
    return {name: tensor.contiguous() for name, tensor in converted.items()}


def write_tiny_model(directory: Path, family: str = "llama3_2", seed: int = 0) -> Path:
    """A two-layer ``family`` model (hidden size 128) with its tokenizer files, in ``directory``;
    the same ``seed`` gives the same weights."""
    from safetensors.torch import save_file

    config = tiny_config(family)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps(config, indent=2))
    save_file(
        _weights(family, config, seed), directory / "model.safetensors", metadata={"format": "pt"}
    )
    _tokenizer_json(_special_tokens(family), directory)
    if family == "llama3_2":
        (directory / "original").mkdir(exist_ok=True)
        ranks = "".join(f"{base64.b64encode(bytes([b])).decode()} {b}\n" for b in range(256))
        (directory / "original" / "tokenizer.model").write_text(ranks)
    else:
        alphabet = byte_alphabet()
        (directory / "vocab.json").write_text(json.dumps({alphabet[b]: b for b in range(256)}))
        (directory / "merges.txt").write_text("#version: 0.2\n")
    return directory


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--family", choices=FAMILIES, default=FAMILIES[0])
    options = parser.parse_args()
    print(write_tiny_model(options.directory, options.family))
