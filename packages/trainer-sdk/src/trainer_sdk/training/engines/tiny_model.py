"""A tiny causal LM built from a config, with a tokenizer trained here: for trying the engines,
their guide, tests and benchmark without a model hub (nothing is downloaded).

    python -m trainer_sdk.training.engines.tiny_model DIR [--family llama|qwen2]

writes a Hugging Face model directory (``config.json``, weights, tokenizer with a chat template)
that ``AutoModelForCausalLM``/``AutoTokenizer`` load and TRL fine-tunes like any other.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Final

__all__ = ["CHAT_TEMPLATE", "FAMILIES", "WORDS", "write_tiny_model"]

FAMILIES: Final = ("llama", "qwen2")
# The vocabulary the tokenizer is trained on: the guide's and the tests' data use these words.
WORDS: Final = [
    "the",
    "a",
    "what",
    "is",
    "color",
    "of",
    "sky",
    "sun",
    "grass",
    "snow",
    "night",
    "blue",
    "yellow",
    "green",
    "white",
    "black",
    "answer",
    "question",
    "user",
    "assistant",
    "system",
    "you",
    "are",
    "helpful",
    "tell",
    "me",
    "it",
]
# Turns as "<s>role: text</s>"; the assistant's wrapped in {% generation %} for TRL's masks.
CHAT_TEMPLATE: Final = (
    "{% for m in messages %}<s>{{ m['role'] }}: "
    "{% if m['role'] == 'assistant' %}{% generation %}{{ m['content'] }}</s>{% endgeneration %}"
    "{% else %}{{ m['content'] }}</s>{% endif %}\n{% endfor %}"
    "{% if add_generation_prompt %}<s>assistant: {% endif %}"
)


def write_tiny_model(directory: Path, family: str = "llama", seed: int = 0) -> Path:
    """A two-layer model of ``family`` (hidden size 32) and its byte-level BPE tokenizer, saved in
    ``directory``; the same ``seed`` gives the same weights."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import (
        LlamaConfig,
        LlamaForCausalLM,
        PreTrainedModel,
        PreTrainedTokenizerFast,
        Qwen2Config,
        Qwen2ForCausalLM,
    )

    if family not in FAMILIES:
        raise ValueError(f"family: expected one of {list(FAMILIES)}, got {family!r}")
    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    texts = [" ".join(WORDS[i:] + WORDS[:i]) for i in range(len(WORDS))]
    tokenizer.train_from_iterator(
        texts,
        trainers.BpeTrainer(
            vocab_size=320,
            special_tokens=["<unk>", "<s>", "</s>", "<pad>"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        ),
    )
    fast = PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
        tokenizer_object=tokenizer,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        unk_token="<unk>",
    )
    fast.chat_template = CHAT_TEMPLATE
    shape = dict(
        vocab_size=len(fast),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        bos_token_id=fast.bos_token_id,
        eos_token_id=fast.eos_token_id,
        pad_token_id=fast.pad_token_id,
        tie_word_embeddings=False,
        # Wide enough initial weights that the logits can move without training the output
        # layer (LoRA does not train it): at the usual 0.02 they stay near uniform.
        initializer_range=0.3,
    )
    torch.manual_seed(seed)
    model: PreTrainedModel = (
        LlamaForCausalLM(LlamaConfig(**shape))
        if family == "llama"
        else Qwen2ForCausalLM(Qwen2Config(**shape))
    )
    directory.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(directory)
    fast.save_pretrained(directory)
    return directory


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("directory", type=Path)
    parser.add_argument("--family", choices=FAMILIES, default="llama")
    arguments = parser.parse_args()
    print(write_tiny_model(arguments.directory, arguments.family))
