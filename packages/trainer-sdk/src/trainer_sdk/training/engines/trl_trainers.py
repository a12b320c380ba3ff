"""The TRL engine's pod side: the trainer of the job's method (``SFTTrainer``, ``DPOTrainer``,
``KTOTrainer``, ``ORPOTrainer`` (from ``trl.experimental``), ``GRPOTrainer`` with the job's
reward functions, ``DistillationTrainer`` with the job's teacher, fetched into ``teacher/``
beside the output by the main rank first) in every rank.

    torchrun -m trainer_sdk.training.engines trl --model_name_or_path=M --dataset_path=D \\
        --output_path=O [--method=dpo] [TRL arguments...]

Arguments are TRL's own (the method's config, ``ModelConfig``) and the engine's
``DatasetArguments``, read with TRL's parser after the platform's defaults (one log line and one
metric point per step, no external reporting, checkpoints by steps, two kept), so a job's
arguments override them. The model is ``AutoModelForCausalLM`` with its tokenizer and chat
template; LoRA is PEFT's (``--use_peft``). Ranks are torchrun's (gloo on CPU). Checkpoints,
resume and reports are ``hf_trainer``'s; the model is written by ``outputs``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from accelerate import PartialState  # type: ignore[import-untyped]
from datasets import Dataset
from transformers import AutoTokenizer, HfArgumentParser, TrainingArguments
from transformers.hf_argparser import DataClassType, string_to_bool
from trl.experimental.orpo import ORPOConfig, ORPOTrainer
from trl.scripts.utils import TrlParser
from trl.trainer.distillation_config import DistillationConfig
from trl.trainer.distillation_trainer import DistillationTrainer
from trl.trainer.dpo_config import DPOConfig
from trl.trainer.dpo_trainer import DPOTrainer
from trl.trainer.grpo_config import GRPOConfig
from trl.trainer.grpo_trainer import GRPOTrainer
from trl.trainer.kto_config import KTOConfig
from trl.trainer.kto_trainer import KTOTrainer
from trl.trainer.model_config import ModelConfig
from trl.trainer.sft_config import SFTConfig
from trl.trainer.sft_trainer import SFTTrainer
from trl.trainer.utils import create_model_from_path, get_peft_config

from trainer_sdk.initializers.fetch import fetch
from trainer_sdk.training.engines import (
    datasets,
    gems_model,
    hf_trainer,
    outputs,
    qat_model,
    rewards,
)
from trainer_sdk.training.engines.dataset_arguments import DatasetArguments
from trainer_sdk.training.engines.trl_methods import CONFIG_NAMES, METHODS
from trainer_sdk.training.engines.trl_names import argument_name

__all__ = ["DEFAULT_ARGUMENTS", "argument_table", "main", "parse", "search_arguments"]

SEARCH_PREFIX: Final = "KUBEFLOW_TRAINER_OPT_"
"""A trial's search parameter ``lora_r`` reaches it as ``KUBEFLOW_TRAINER_OPT_LORA_R``."""
DEFAULT_ARGUMENTS: Final = (
    "--logging_steps=1",
    "--report_to=none",
    "--save_strategy=steps",
    "--save_total_limit=2",
    "--disable_tqdm=true",
)
# Each method's TRL config and trainer.
_CONFIGS: Final[dict[str, type[TrainingArguments]]] = {
    "sft": SFTConfig,
    "dpo": DPOConfig,
    "kto": KTOConfig,
    "orpo": ORPOConfig,
    "grpo": GRPOConfig,
    "distillation": DistillationConfig,
}
_TRAINERS: Final[dict[str, Any]] = {
    "sft": SFTTrainer,
    "dpo": DPOTrainer,
    "kto": KTOTrainer,
    "orpo": ORPOTrainer,
    "grpo": GRPOTrainer,
    "distillation": DistillationTrainer,
}


def _parser(method: str) -> TrlParser:
    dataclasses = (DatasetArguments, _CONFIGS[method], ModelConfig)
    return TrlParser(
        tuple(map(DataClassType, dataclasses)), prog="python -m trainer_sdk.training.engines trl"
    )


def _kinds(parser: TrlParser) -> dict[str, Any]:
    kinds: dict[str, Any] = {}
    for action in parser._actions:
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


def argument_table() -> dict[str, dict[str, Any]]:
    """What ``trl_arguments.json`` holds for the installed TRL: for each method, every argument
    its parser takes -> ``bool``, ``int``, ``float``, ``str``, ``list`` or its accepted values."""
    return {method: _kinds(_parser(method)) for method in METHODS}


def search_arguments(method: str, environ: Mapping[str, str]) -> list[str]:
    """An optimizer trial's parameters (``OptimizerClient``'s search space, named after TRL's
    arguments, ``learning_rate``, ``lora_r``, ``beta``, or ``TRLConfig``'s, ``lora_rank``) as TRL
    arguments; ValueError names a parameter the method does not take."""
    kinds = _kinds(_parser(method))
    arguments = []
    for variable, value in sorted(environ.items()):
        if not variable.startswith(SEARCH_PREFIX):
            continue
        name = argument_name(variable.removeprefix(SEARCH_PREFIX).lower())
        if name not in kinds:
            raise ValueError(
                f"search parameter {name!r}: not an argument of TRL's {CONFIG_NAMES[method]} or "
                "ModelConfig or of this engine"
            )
        arguments.append(f"--{name}={value}")
    return arguments


def parse(args: Sequence[str]) -> tuple[DatasetArguments, TrainingArguments, ModelConfig]:
    """The three argument sets; ``output_dir`` (TRL's checkpoints) is the checkpoint directory;
    an optimizer trial's parameters come last, over the job's own."""
    known, _ = HfArgumentParser(DataClassType(DatasetArguments)).parse_known_args(list(args))
    checkpoints = hf_trainer.checkpoint_directory(Path(known.output_path))
    trial = search_arguments(known.method, os.environ)
    everything = [*DEFAULT_ARGUMENTS, *args, *trial, f"--output_dir={checkpoints}"]
    paths, training, model = _parser(known.method).parse_args_into_dataclasses(everything)
    if not model.model_name_or_path:
        raise ValueError("--model_name_or_path: the runtime must name the model's directory")
    return paths, training, model


def _records(paths: DatasetArguments, tokenizer: Any) -> Dataset:
    """The data set in the form the method's trainer takes."""
    records = datasets.load_records(
        Path(paths.dataset_path), paths.dataset_source, paths.dataset_split
    )
    column_map = json.loads(paths.column_map) if paths.column_map else {}
    conversational = tokenizer.chat_template is not None
    if paths.method in ("dpo", "kto", "orpo"):
        pairs = datasets.to_preference_records(
            records, column_map, paths.new_system_prompt, conversational
        )
        return datasets.to_unpaired_records(pairs) if paths.method == "kto" else pairs
    if paths.method in ("grpo", "distillation"):
        return datasets.to_prompt_records(
            records, column_map, paths.new_system_prompt, conversational
        )
    return datasets.to_training_records(
        records,
        paths.dataset_format,
        column_map,
        paths.new_system_prompt,
        paths.train_on_input,
        conversational=conversational,
    )


def _teacher(paths: DatasetArguments) -> str:
    """The teacher's directory (``teacher/`` beside the output): the main rank fetches it,
    unless an earlier attempt did, while the others wait; then they find it there."""
    if not paths.teacher_storage_uri:
        raise ValueError("--teacher_storage_uri: distillation needs the teacher model")
    target = Path(paths.output_path).with_name("teacher")
    with PartialState().main_process_first():
        if not target.is_dir():
            uri = paths.teacher_storage_uri

            def fetch_into(directory: Path) -> None:
                fetch("model", uri, directory, os.environ)

            outputs.write_atomically(target, fetch_into)
            print(f"teacher model fetched from {uri} into {target}", flush=True)
    return str(target)


def _write(model: Any, tokenizer: Any, paths: DatasetArguments) -> list[Path]:
    """The trained model's output directories (after QAT: the converted model)."""
    output = Path(paths.output_path)
    if not paths.qat_scheme:
        return outputs.write_model(model, tokenizer, output, paths.merge_adapter)
    scheme, group_size = paths.qat_scheme, paths.qat_group_size
    converted = qat_model.convert(model, scheme, group_size)
    return [
        outputs.write_atomically(
            output / outputs.MODEL,
            lambda directory: qat_model.write(converted, tokenizer, directory, scheme, group_size),
        )
    ]


def main(args: Sequence[str]) -> int:
    """Fine-tune, write the model; 0 when done."""
    paths, training, model_args = parse(args)
    tokenizer = AutoTokenizer.from_pretrained(model_args.model_name_or_path)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    records = _records(paths, tokenizer)
    # TRL loads the model (AutoModelForCausalLM) from its directory, as its own script does.
    given = getattr(training, "model_init_kwargs", None)
    training.model_init_kwargs = {  # type: ignore[attr-defined]
        "dtype": model_args.dtype or "auto",
        "attn_implementation": model_args.attn_implementation,
        **(json.loads(given) if isinstance(given, str) else given or {}),
    }
    method_arguments: dict[str, Any] = {}
    if paths.method == "grpo":
        if not paths.reward_functions:
            raise ValueError("--reward_functions: GRPO needs at least one reward function")
        method_arguments["reward_funcs"] = rewards.reward_functions(
            paths.reward_functions, records.column_names
        )
    if paths.method == "distillation":
        method_arguments["teacher_model"] = _teacher(paths)
    model: Any = str(model_args.model_name_or_path)
    if paths.qat_scheme:  # TRL trains the prepared model object
        model = qat_model.prepare(
            create_model_from_path(model, **training.model_init_kwargs),  # type: ignore[attr-defined]
            paths.qat_scheme,
            paths.qat_group_size,
        )
        training.model_init_kwargs = None  # type: ignore[attr-defined]
    if paths.gems_kernels:  # never with QAT: refused at submit
        model = gems_model.load_patched_model(model, training)
        print("model patched with gems kernels: RMSNorm, rotary, SwiGLU, fused loss", flush=True)
    main_rank = int(os.environ.get("RANK", "0")) == 0
    resume = hf_trainer.resume_checkpoint(Path(str(training.output_dir)), main_rank)
    trainer = _TRAINERS[paths.method](
        model=model,
        args=training,
        train_dataset=records,
        processing_class=tokenizer,
        peft_config=get_peft_config(model_args),
        callbacks=[hf_trainer.PlatformCallback()],
        **method_arguments,
    )
    if resume is not None:
        print(f"resuming from {resume}", flush=True)
    trainer.train(resume_from_checkpoint=str(resume) if resume is not None else None)
    if trainer.accelerator.is_main_process:
        trained = trainer.accelerator.unwrap_model(trainer.model)
        for written in _write(trained, tokenizer, paths):
            print(f"fine-tuned model written to {written}", flush=True)
    trainer.accelerator.wait_for_everyone()
    return 0
