"""The TRL engine's own command-line arguments, beside TRL's ``SFTConfig`` and ``ModelConfig``:
where the data set and the output are, and how records read. Plain dataclass fields, as TRL's
parser takes them (``sft`` parses them in the pod; ``trl_arguments.json`` lists them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

__all__ = ["DATASET_FORMATS", "DatasetArguments"]

DATASET_FORMATS: Final = ("auto", "instruct", "chat", "prompt_completion", "text")


@dataclass
class DatasetArguments:
    """This engine's own arguments, beside TRL's ``SFTConfig`` and ``ModelConfig``."""

    dataset_path: str = field(metadata={"help": "The data set's directory or file."})
    output_path: str = field(
        metadata={"help": "Where the fine-tuned model (model/) and LoRA adapter (adapter/) go."}
    )
    dataset_format: str = field(
        default="auto",
        metadata={"help": "How records read as conversations.", "choices": DATASET_FORMATS},
    )
    dataset_source: str | None = field(
        default=None,
        metadata={"help": "The data files' format (json, csv, parquet...); unset: by suffix."},
    )
    dataset_split: str = field(default="train", metadata={"help": "Split, e.g. train[:100]."})
    column_map: str | None = field(
        default=None, metadata={"help": "JSON object: expected column name -> the data's."}
    )
    new_system_prompt: str | None = field(
        default=None, metadata={"help": "A system message put before every conversation."}
    )
    train_on_input: bool = field(
        default=False, metadata={"help": "Train on the prompt too, not only on the answer."}
    )
    merge_adapter: bool = field(
        default=True, metadata={"help": "LoRA: also write the base model merged with the adapter."}
    )
