"""torchtune command synthesis for the Torch plugin: recipe, config and rendezvous endpoint.

A TrainJob whose trainer command is ``tune run`` on a ``torchtune-<model>-<size>`` runtime gets
the full ``tune run`` command line: the rendezvous endpoint (distributed recipes only), the
recipe and config chosen from node and process counts and the LoRA/QLoRA args, and the
runtime's fixed overrides (output and checkpoint directories, tokenizer files).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import trainer_api
from trainer_api import FieldError, Trainer

from trainer_runtime import constants

__all__ = [
    "ENTRYPOINT",
    "IMMUTABLE_CONFIGS",
    "SUPPORTED_MODELS",
    "command",
    "is_torchtune",
    "model_from_runtime_name",
    "recipe_and_config",
    "validate",
]

ENTRYPOINT: Final = ("tune", "run")
IMMUTABLE_CONFIGS: Final = frozenset(
    {"output_dir", "tokenizer.path", "tokenizer.merges_file", "checkpointer.checkpoint_dir"}
)
SUPPORTED_MODELS: Final = ("llama3_2/1B", "llama3_2/3B", "llama3_3/70B", "qwen2_5/1.5B")
MULTI_NODE_MODELS: Final = frozenset({"llama3_3/70B"})
LORA_ARG: Final = "model.lora_attn_modules"
QUANTIZE_BASE_ARG: Final = "model.quantize_base"
DORA_ARG: Final = "model.use_dora"


def is_torchtune(job_trainer: Trainer) -> bool:
    """Whether the TrainJob asks for torchtune (its command is exactly ``tune run``)."""
    return tuple(job_trainer.command or ()) == ENTRYPOINT


def model_from_runtime_name(runtime_name: str) -> str:
    """``torchtune-llama3.2-1b`` -> ``llama3_2/1B`` ("" when the name has another shape)."""
    fields = runtime_name.split("-")
    if len(fields) != 3:
        return ""
    return f"{fields[1].replace('.', '_')}/{fields[2].upper()}"


def _uses_lora(args: Sequence[str]) -> bool:
    return any(LORA_ARG in arg for arg in args)


def _uses_qlora(args: Sequence[str]) -> bool:
    if any(DORA_ARG in arg for arg in args):
        return False
    return any(QUANTIZE_BASE_ARG in arg for arg in args)


def recipe_and_config(
    num_nodes: int, num_proc_per_node: str, gpus: int, model: str, args: Sequence[str]
) -> tuple[str, str]:
    """The torchtune recipe and config for this shape of job."""
    single_device = num_nodes == 1 and (num_proc_per_node == "1" or gpus == 1)
    if single_device:
        if _uses_qlora(args):
            return "lora_finetune_single_device", f"{model}_qlora_single_device"
        if _uses_lora(args):
            return "lora_finetune_single_device", f"{model}_lora_single_device"
        return "full_finetune_single_device", f"{model}_full_single_device"
    if num_nodes == 1 and _uses_qlora(args):
        return "lora_finetune_distributed", f"{model}_qlora"
    if num_nodes == 1 and _uses_lora(args):
        return "lora_finetune_distributed", f"{model}_lora"
    if num_nodes > 1:
        return "full_finetune_distributed", f"{model}_full_multinode"
    return "full_finetune_distributed", f"{model}_full"


def command(
    job_name: str,
    runtime_name: str,
    runtime_command: Sequence[str],
    num_nodes: int,
    num_proc_per_node: str,
    gpus: int,
    args: Sequence[str],
) -> list[str]:
    """The full ``tune run`` command line for the trainer container."""
    recipe, config = recipe_and_config(
        num_nodes, num_proc_per_node, gpus, model_from_runtime_name(runtime_name), args
    )
    line = list(ENTRYPOINT)
    if recipe.endswith("_distributed"):
        node_0 = f"{job_name}-{trainer_api.NODE}-0-0.{job_name}"
        line.append(f"--rdzv_endpoint={node_0}:{constants.CONTAINER_TRAINER_PORT}")
    line += [recipe, "--config", config]
    line += [arg for arg in runtime_command if arg.split("=", 1)[0] in IMMUTABLE_CONFIGS]
    return line


def validate(
    runtime_name: str, job_trainer: Trainer, num_proc_per_node: str, gpus: int
) -> list[FieldError]:
    """The torchtune rules: supported model, node count, LoRA/QLoRA limits, runtime-owned args."""
    errors: list[FieldError] = []
    model = model_from_runtime_name(runtime_name)
    if model not in SUPPORTED_MODELS:
        errors.append(
            FieldError(
                "spec.runtimeRef.name",
                f"must name a torchtune runtime of a supported model {list(SUPPORTED_MODELS)}, "
                f"got model {model!r}",
            )
        )
    num_nodes = job_trainer.num_nodes or 1
    args = list(job_trainer.args or ())
    if num_nodes > 1 and model not in MULTI_NODE_MODELS:
        errors.append(FieldError("spec.trainer.numNodes", f"must be 1 for the {model} model"))
    if num_nodes > 1 and (_uses_lora(args) or _uses_qlora(args)):
        errors.append(
            FieldError(
                "spec.trainer.numNodes",
                "must be 1 for LoRA fine-tuning: torchtune has no multi-node LoRA recipe",
            )
        )
    _, config = recipe_and_config(num_nodes, num_proc_per_node, gpus, model, args)
    if config.endswith(("_qlora", "_qlora_single_device")) and model == "qwen2_5/1.5B":
        errors.append(
            FieldError("spec.runtimeRef.name", f"QLoRA is not supported for the {model} model")
        )
    if config.endswith("_qlora") and model in ("llama3_2/1B", "llama3_2/3B"):
        errors += [
            FieldError(
                "spec.trainer.numProcPerNode",
                f"must be 1 (or unset) for the {model} model with QLoRA",
            ),
            FieldError(
                "spec.trainer.resourcesPerNode",
                f"must have a GPU resource of 1 for the {model} model with QLoRA",
            ),
        ]
    for index, arg in enumerate(args):
        key = arg.split("=", 1)[0]
        if key in IMMUTABLE_CONFIGS:
            errors.append(
                FieldError(
                    f"spec.trainer.args[{index}]", f"must not set {key!r}: the runtime manages it"
                )
            )
    return errors
