"""The TRL engine's own command-line arguments, beside the method's TRL config and
``ModelConfig``: the method, where the data set and the output are, and how records read.
Plain dataclass fields, as TRL's parser takes them (``trl_trainers`` parses them in the pod;
``trl_arguments.json`` lists them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from trainer_sdk.training.engines import qat, trl_methods

__all__ = ["DATASET_FORMATS", "DatasetArguments"]

DATASET_FORMATS: Final = (
    "auto",
    "instruct",
    "chat",
    "prompt_completion",
    "text",
    "preference",
    "prompt",
)


@dataclass
class DatasetArguments:
    """This engine's own arguments, beside the method's TRL config and ``ModelConfig``."""

    dataset_path: str = field(metadata={"help": "The data set's directory or file."})
    output_path: str = field(
        metadata={"help": "Where the fine-tuned model (model/) and LoRA adapter (adapter/) go."}
    )
    method: str = field(
        default="sft",
        metadata={"help": "The training method.", "choices": trl_methods.METHODS},
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
    reward_functions: str | None = field(
        default=None,
        metadata={"help": "GRPO: a JSON list of reward functions (``rewards.reward_spec``)."},
    )
    teacher_storage_uri: str | None = field(
        default=None,
        metadata={"help": "Distillation: the teacher model's storage URI (hf://, s3://, file://)."},
    )
    merge_adapter: bool = field(
        default=True, metadata={"help": "LoRA: also write the base model merged with the adapter."}
    )
    qat_scheme: str | None = field(
        default=None,
        metadata={
            "help": "Quantization-aware training to this torchao scheme.",
            "choices": qat.SCHEMES,
        },
    )
    qat_group_size: int = field(
        default=32, metadata={"help": "QAT: how many weights of a row share one scale."}
    )
    gems_kernels: bool = field(
        default=False,
        metadata={"help": "Patch a Llama, Qwen2 or Mistral with gems' fused kernels."},
    )
