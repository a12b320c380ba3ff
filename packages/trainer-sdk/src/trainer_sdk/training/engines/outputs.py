"""The fine-tuned model a user loads: a Hugging Face directory in the job's output directory.

    <output>/model/     the model (after LoRA: the base model merged with the adapter) and its
                        tokenizer; ``AutoModelForCausalLM.from_pretrained`` loads it
    <output>/adapter/   LoRA only: the adapter (PEFT's format) and the tokenizer

Each directory is written under a temporary name and renamed, so a reader finds a whole model or
none; written once, by the main rank, after training.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

__all__ = ["ADAPTER", "MODEL", "write_atomically", "write_model"]

MODEL: Final = "model"
ADAPTER: Final = "adapter"


def write_atomically(target: Path, write: Callable[[Path], None]) -> Path:
    """``write`` into a fresh temporary directory beside ``target``, then rename it there
    (replacing an earlier one)."""
    temporary = target.with_name(f".{target.name}.tmp")
    shutil.rmtree(temporary, ignore_errors=True)
    temporary.mkdir(parents=True)
    write(temporary)
    shutil.rmtree(target, ignore_errors=True)
    temporary.rename(target)
    return target


def write_model(model: Any, tokenizer: Any, output: Path, merge: bool) -> list[Path]:
    """Write ``model`` (a ``PreTrainedModel``, or a PEFT model: its adapter, and with ``merge``
    the merged model) and ``tokenizer``; returns the directories written."""

    def save(directory: Path, what: Any) -> None:
        what.save_pretrained(directory)
        tokenizer.save_pretrained(directory)

    written = []
    if hasattr(model, "merge_and_unload"):  # a PEFT model: the adapter, then the merged model
        written.append(write_atomically(output / ADAPTER, lambda d: save(d, model)))
        if merge:
            merged = model.merge_and_unload()
            written.append(write_atomically(output / MODEL, lambda d: save(d, merged)))
    else:
        written.append(write_atomically(output / MODEL, lambda d: save(d, model)))
    return written
