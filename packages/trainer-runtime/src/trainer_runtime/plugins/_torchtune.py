"""torchtune command synthesis for the Torch plugin: recipe, config and rendezvous endpoint.

A TrainJob whose trainer command is ``tune run`` on a ``torchtune-<model>-<size>`` runtime gets
the full ``tune run`` command line: the rendezvous endpoint when the job runs more than one
process, the trainer SDK's recipe (one recipe for full, LoRA and QLoRA fine-tuning, in one
process or sharded over several, on GPU or CPU), the torchtune config of the runtime's model for
the kind of fine-tune its args ask for (its defaults), and the runtime's fixed overrides (output
and checkpoint directories, tokenizer files).
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
    "RECIPE",
    "SUPPORTED_MODELS",
    "command",
    "config_name",
    "is_torchtune",
    "model_from_runtime_name",
    "validate",
]

ENTRYPOINT: Final = ("tune", "run")
# The trainer SDK's recipe, as `tune run` takes a recipe of its own: a path that names a module.
RECIPE: Final = "trainer_sdk/training/engines/torchtune/recipe.py"
# Set by the runtime (where the initializers put the model and where the output goes) or
# derived by the recipe from the checkpoint directory: a job may not set them.
IMMUTABLE_CONFIGS: Final = frozenset(
    {
        "output_dir",
        "tokenizer.path",
        "tokenizer.merges_file",
        "checkpointer.checkpoint_dir",
        "checkpointer.checkpoint_files",
        "checkpointer.model_type",
        "checkpointer.output_dir",
    }
)
# The models (torchtune config prefixes) whose families the recipe builds.
SUPPORTED_MODELS: Final = ("llama3_2/1B", "llama3_2/3B", "llama3_3/70B", "qwen2_5/1.5B")
# torchtune's QLoRA configs; a model without one takes its LoRA config (QLoRA is then the
# job's model.quantize_base=True).
QLORA_CONFIGS: Final = {
    "llama3_2/1B": "llama3_2/1B_qlora_single_device",
    "llama3_2/3B": "llama3_2/3B_qlora_single_device",
    "llama3_3/70B": "llama3_3/70B_qlora",
}
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


def _sets(args: Sequence[str], key: str) -> bool:
    return any(arg.split("=", 1)[0] == key for arg in args)


def config_name(model: str, args: Sequence[str]) -> str:
    """The torchtune config whose defaults the job starts from."""
    if _sets(args, QUANTIZE_BASE_ARG) and not _sets(args, DORA_ARG):
        return QLORA_CONFIGS.get(model, f"{model}_lora")
    if _sets(args, LORA_ARG) or _sets(args, QUANTIZE_BASE_ARG):
        return f"{model}_lora"
    return f"{model}_full"


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
    line = list(ENTRYPOINT)
    one_process = num_nodes == 1 and (num_proc_per_node == "1" or gpus == 1)
    if not one_process:
        node_0 = f"{job_name}-{trainer_api.NODE}-0-0.{job_name}"
        line.append(f"--rdzv_endpoint={node_0}:{constants.CONTAINER_TRAINER_PORT}")
    line += [RECIPE, "--config", config_name(model_from_runtime_name(runtime_name), args)]
    line += [arg for arg in runtime_command if "=" in arg and not arg.startswith("-")]
    return line


def validate(runtime_name: str, job_trainer: Trainer) -> list[FieldError]:
    """The torchtune rules: a supported model, and no runtime-owned config key in the args."""
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
    for index, arg in enumerate(job_trainer.args or ()):
        key = arg.split("=", 1)[0]
        if key in IMMUTABLE_CONFIGS:
            errors.append(
                FieldError(
                    f"spec.trainer.args[{index}]", f"must not set {key!r}: the runtime manages it"
                )
            )
    return errors
