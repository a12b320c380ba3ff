"""The TRL engine's pod side: supervised fine-tuning with TRL's ``SFTTrainer`` in every rank.

    torchrun -m trainer_sdk.training.engines trl --model_name_or_path=M --dataset_path=D \\
        --output_path=O [TRL arguments...]

Arguments are TRL's own (``SFTConfig``, ``ModelConfig``) and the engine's ``DatasetArguments``,
read with TRL's parser after the platform's defaults (one log line and one metric point per
step, no external reporting, checkpoints by steps, two kept), so a job's arguments override
them. The model is ``AutoModelForCausalLM`` with its tokenizer and chat template; LoRA is PEFT's
(``--use_peft``). Ranks are torchrun's (gloo on CPU). Checkpoints, resume and reports are
``hf_trainer``'s; the model is written by ``outputs``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from transformers import AutoTokenizer, HfArgumentParser
from transformers.hf_argparser import DataClassType, string_to_bool
from trl.scripts.utils import TrlParser
from trl.trainer.model_config import ModelConfig
from trl.trainer.sft_config import SFTConfig
from trl.trainer.sft_trainer import SFTTrainer
from trl.trainer.utils import get_peft_config

from trainer_sdk.training.engines import datasets, hf_trainer, outputs
from trainer_sdk.training.engines.trl import DatasetArguments

__all__ = ["DEFAULT_ARGUMENTS", "argument_table", "main", "parse"]

DEFAULT_ARGUMENTS: Final = (
    "--logging_steps=1",
    "--report_to=none",
    "--save_strategy=steps",
    "--save_total_limit=2",
    "--disable_tqdm=true",
)
_DATACLASSES: Final = tuple(map(DataClassType, (DatasetArguments, SFTConfig, ModelConfig)))


def _parser() -> TrlParser:
    return TrlParser(_DATACLASSES, prog="python -m trainer_sdk.training.engines trl")


def argument_table() -> dict[str, Any]:
    """What ``trl_arguments.json`` holds for the installed TRL: every argument the parser takes
    -> ``bool``, ``int``, ``float``, ``str``, ``list`` or its accepted values."""
    kinds: dict[str, Any] = {}
    for action in _parser()._actions:
        if not action.option_strings or action.dest == "help":
            continue
        if action.choices:
            kinds[action.dest] = [str(choice) for choice in action.choices]
        elif action.nargs in ("+", "*"):
            kinds[action.dest] = "list"
        elif action.type is string_to_bool:
            kinds[action.dest] = "bool"
        elif action.type in (int, float):
            kinds[action.dest] = action.type.__name__
        else:
            kinds[action.dest] = "str"
    return dict(sorted(kinds.items()))


def parse(args: Sequence[str]) -> tuple[DatasetArguments, SFTConfig, ModelConfig]:
    """The three argument sets; ``output_dir`` (TRL's checkpoints) is the checkpoint directory."""
    known, _ = HfArgumentParser(DataClassType(DatasetArguments)).parse_known_args(list(args))
    checkpoints = hf_trainer.checkpoint_directory(Path(known.output_path))
    everything = [*DEFAULT_ARGUMENTS, *args, f"--output_dir={checkpoints}"]
    paths, training, model = _parser().parse_args_into_dataclasses(everything)
    if not model.model_name_or_path:
        raise ValueError("--model_name_or_path: the runtime must name the model's directory")
    return paths, training, model


def main(args: Sequence[str]) -> int:
    """Fine-tune, write the model; 0 when done."""
    paths, training, model_args = parse(args)
    tokenizer = AutoTokenizer.from_pretrained(model_args.model_name_or_path)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    records = datasets.to_training_records(
        datasets.load_records(Path(paths.dataset_path), paths.dataset_source, paths.dataset_split),
        paths.dataset_format,
        json.loads(paths.column_map) if paths.column_map else {},
        paths.new_system_prompt,
        paths.train_on_input,
        conversational=tokenizer.chat_template is not None,
    )
    # TRL loads the model (AutoModelForCausalLM) from its directory, as its own script does.
    given = training.model_init_kwargs
    training.model_init_kwargs = {
        "dtype": model_args.dtype or "auto",
        "attn_implementation": model_args.attn_implementation,
        **(json.loads(given) if isinstance(given, str) else given or {}),
    }
    main_rank = int(os.environ.get("RANK", "0")) == 0
    resume = hf_trainer.resume_checkpoint(Path(str(training.output_dir)), main_rank)
    trainer = SFTTrainer(
        model=str(model_args.model_name_or_path),
        args=training,
        train_dataset=records,
        processing_class=tokenizer,
        peft_config=get_peft_config(model_args),
        callbacks=[hf_trainer.PlatformCallback()],
    )
    if resume is not None:
        print(f"resuming from {resume}", flush=True)
    trainer.train(resume_from_checkpoint=str(resume) if resume is not None else None)
    if trainer.accelerator.is_main_process:
        trained = trainer.accelerator.unwrap_model(trainer.model)
        for written in outputs.write_model(
            trained, tokenizer, Path(paths.output_path), paths.merge_adapter
        ):
            print(f"fine-tuned model written to {written}", flush=True)
    trainer.accelerator.wait_for_everyone()
    return 0
