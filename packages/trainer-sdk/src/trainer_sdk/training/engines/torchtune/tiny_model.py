"""Tiny models of the torchtune runtimes' families, built from configs with their tokenizer files:
for trying the torchtune engine, its tests and benchmark without a model hub.

    python -m trainer_sdk.training.engines.torchtune.tiny_model DIR [--family llama3_2|qwen2_5]

(in torchtune's environment, whose special-token tables it uses). The directory is what the
model initializer would put on the volume for the real model: ``config.json`` and safetensors
weights (transformers' ``save_pretrained``), ``tokenizer.json`` (a byte-level BPE without merges
whose added tokens are torchtune's special tokens for the family, numbered after the 256 bytes),
and the family's own tokenizer files: Llama's tiktoken ``original/tokenizer.model``, Qwen's
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

__all__ = ["FAMILIES", "byte_alphabet", "write_tiny_model"]

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
    # Weights large enough for attention to be sharp: positions (RoPE) then change the logits.
    "initializer_range": 0.2,
}


def byte_alphabet() -> dict[int, str]:
    """Byte -> the character byte-level BPE vocabularies spell it with."""
    extra = iter(range(256, 512))
    return {byte: chr(byte if byte in _PRINTABLE else next(extra)) for byte in range(256)}


def _tokenizer_json(special: Mapping[str, int], directory: Path) -> dict[str, int]:
    """``tokenizer.json`` with the special tokens after the bytes; their new ids."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    alphabet = byte_alphabet()
    tokenizer = Tokenizer(models.BPE(vocab={alphabet[b]: b for b in range(256)}, merges=[]))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    names = sorted(special, key=special.__getitem__)
    tokenizer.add_special_tokens([AddedToken(name, special=True) for name in names])
    tokenizer.save(str(directory / "tokenizer.json"))
    return {name: 256 + index for index, name in enumerate(names)}


def write_tiny_model(directory: Path, family: str = "llama3_2", seed: int = 0) -> Path:
    """A two-layer ``family`` model (hidden size 128) with its tokenizer files, in ``directory``;
    the same ``seed`` gives the same weights."""
    import torch
    from torchtune.models.llama3._tokenizer import LLAMA3_SPECIAL_TOKENS
    from torchtune.models.qwen2_5._tokenizer import QWEN2_5_SPECIAL_TOKENS
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    if family not in FAMILIES:
        raise ValueError(f"family: expected one of {list(FAMILIES)}, got {family!r}")
    directory.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    if family == "llama3_2":
        ids = _tokenizer_json(LLAMA3_SPECIAL_TOKENS, directory)
        llama = LlamaConfig(
            vocab_size=256 + len(ids),
            rms_norm_eps=1e-5,
            rope_parameters={  # Llama 3.2's
                "rope_type": "llama3",
                "rope_theta": 500_000.0,
                "factor": 32.0,
                "low_freq_factor": 1.0,
                "high_freq_factor": 4.0,
                "original_max_position_embeddings": 8192,
            },
            bos_token_id=ids["<|begin_of_text|>"],
            eos_token_id=ids["<|eot_id|>"],
            **_DIMENSIONS,
        )
        LlamaForCausalLM(llama).save_pretrained(directory)
        (directory / "original").mkdir(exist_ok=True)
        ranks = "".join(f"{base64.b64encode(bytes([b])).decode()} {b}\n" for b in range(256))
        (directory / "original" / "tokenizer.model").write_text(ranks)
    else:
        ids = _tokenizer_json(QWEN2_5_SPECIAL_TOKENS, directory)
        qwen = Qwen2Config(
            vocab_size=256 + len(ids),
            rms_norm_eps=1e-6,
            rope_parameters={"rope_type": "default", "rope_theta": 1_000_000.0},
            bos_token_id=ids["<|endoftext|>"],
            eos_token_id=ids["<|im_end|>"],
            **_DIMENSIONS,
        )
        Qwen2ForCausalLM(qwen).save_pretrained(directory)
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
