"""The TRL engine: fine-tuning (full or LoRA) of any Hugging Face causal LM by one of TRL's
methods (``TRLConfig.method``: supervised, DPO, KTO, ORPO, GRPO, distillation; ``trl_methods``
renders each).

Submit side (pure): ``TRLConfig`` -> the TrainJob's args, TRL's own command-line arguments
(``--learning_rate=2e-05``, ``--use_peft=true``, ``--lora_target_modules q_proj v_proj``), which
follow the runtime's command::

    torchrun -m trainer_sdk.training.engines trl --model_name_or_path=/workspace/model \\
        --dataset_path=/workspace/dataset --output_path=/workspace/output [runtime defaults]

``overrides`` may name any argument the method's TRL config (``SFTConfig``, ``DPOConfig``...),
``ModelConfig`` or this engine's ``dataset_arguments.DatasetArguments`` takes:
``trl_arguments.json`` lists them with their kinds for the pinned TRL, per method
(``trl_trainers.argument_table()`` makes it; a test compares it with the installed TRL's), so a
misspelled name or a wrong kind is refused at submit, naming the field. Pod side (``run``,
imports TRL): ``trainer_sdk.training.engines.trl_trainers``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from importlib import resources
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

from trainer_sdk import types
from trainer_sdk.errors import InvalidTrainJobError
from trainer_sdk.training.engines import qat, trl_methods
from trainer_sdk.training.engines.base import EngineTrainer
from trainer_sdk.training.engines.settings import field_error, setting_errors
from trainer_sdk.training.engines.trl_names import SETTING_ARGUMENTS

if TYPE_CHECKING:
    from trainer_api import FieldError

__all__ = [
    "ARGUMENTS_FILE",
    "ENGINE",
    "RUNTIME_ARGUMENTS",
    "TRL",
    "argument_kinds",
]

ARGUMENTS_FILE: Final = "trl_arguments.json"
RUNTIME_ARGUMENTS: Final = frozenset(
    {"model_name_or_path", "dataset_path", "output_path", "output_dir"}
)
"""Set by the runtime's command (where the initializers put the model and data set, where the
model goes); a job may not set them."""
# torchtune's module names (upstream's LoraConfig defaults) as Hugging Face models name them.
_HF_MODULE: Final = {"output_proj": "o_proj"}
_MLP_MODULES: Final = ("gate_proj", "up_proj", "down_proj")


def argument_kinds(method: str = "sft") -> dict[str, Any]:
    """The arguments the pod side accepts for ``method`` (``trl_arguments.json``): name ->
    ``bool``, ``int``, ``float``, ``str``, ``list`` or the list of accepted values."""
    text = resources.files(__package__).joinpath(ARGUMENTS_FILE).read_text(encoding="utf-8")
    kinds: dict[str, Any] = json.loads(text)[method]
    return kinds


def _value_problem(kind: Any, value: Any) -> str | None:
    """Why ``value`` is not an argument of ``kind``, or None."""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "bool":
        ok = isinstance(value, bool)
    elif kind == "int":
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif kind == "float":
        ok = number and math.isfinite(value)
    elif kind == "list":
        ok = isinstance(value, (list, tuple)) and all(
            isinstance(item, (str, int, float)) for item in value
        )
    elif isinstance(kind, list):
        ok = str(value) in kind
        return None if ok else f"expected one of {kind}, got {value!r}"
    else:  # a string, or a type TRL's parser reads from a string (a union, a JSON object)
        ok = isinstance(value, (str, int, float, dict))
    return None if ok else f"expected a {kind}, got {value!r}"


def _render(name: str, value: Any) -> list[str]:
    """One argument as TRL's parser reads it."""
    if isinstance(value, bool):
        return [f"--{name}={str(value).lower()}"]
    if isinstance(value, (list, tuple)):
        return [f"--{name}", *(str(item) for item in value)]
    if isinstance(value, dict):
        return [f"--{name}={json.dumps(value)}"]
    return [f"--{name}={value}"]


def _lora_arguments(peft: types.LoraConfig, where: str) -> tuple[dict[str, Any], list[FieldError]]:
    errors = []
    if peft.quantize_base:
        errors.append(
            field_error(
                f"{where}.peft_config.quantize_base",
                "QLoRA is not supported by the TRL engine here (it needs bitsandbytes on CUDA); "
                "use LoRA, or the torchtune engine",
            )
        )
    if peft.apply_lora_to_output:
        errors.append(
            field_error(
                f"{where}.peft_config.apply_lora_to_output",
                "TRL computes the loss from the output layer's weights directly, so a LoRA "
                "adapter there would never train; to train the output layer fully, use "
                "overrides={'lora_modules_to_save': ['lm_head']}",
            )
        )
    modules = [_HF_MODULE.get(module, module) for module in peft.lora_attn_modules]
    modules += list(_MLP_MODULES) if peft.apply_lora_to_mlp else []
    arguments: dict[str, Any] = {"use_peft": True, "lora_target_modules": modules}
    for name, argument in (
        ("lora_rank", "lora_r"),
        ("lora_alpha", "lora_alpha"),
        ("lora_dropout", "lora_dropout"),
        ("use_dora", "use_dora"),
    ):
        if (value := getattr(peft, name)) is not None:
            arguments[argument] = value
    return arguments, errors


_DATASET_FORMAT: Final = {
    types.TorchTuneInstructDataset: "instruct",
    types.ChatDataset: "chat",
    types.PreferenceDataset: "preference",
    types.PromptDataset: "prompt",
}


def _dataset_arguments(
    dataset: (
        types.TorchTuneInstructDataset
        | types.ChatDataset
        | types.PreferenceDataset
        | types.PromptDataset
    ),
) -> dict[str, Any]:
    arguments: dict[str, Any] = {"dataset_format": _DATASET_FORMAT[type(dataset)]}
    if dataset.source is not None:
        arguments["dataset_source"] = dataset.source.value
    if dataset.split:
        arguments["dataset_split"] = dataset.split
    if dataset.train_on_input is not None:
        arguments["train_on_input"] = dataset.train_on_input
    if dataset.new_system_prompt:
        arguments["new_system_prompt"] = dataset.new_system_prompt
    if dataset.column_map:
        arguments["column_map"] = dataset.column_map
    return arguments


def _override_errors(
    overrides: Mapping[str, Any], kinds: Mapping[str, Any], method: str, where: str
) -> list[FieldError]:
    errors = []
    for name, value in overrides.items():
        path = f"{where}.overrides[{name!r}]"
        if name in RUNTIME_ARGUMENTS:
            errors.append(
                field_error(path, "set by the runtime (the initializers' and the output's paths)")
            )
        elif name in trl_methods.METHOD_ARGUMENTS:
            errors.append(field_error(path, "set by TRLConfig.method"))
        elif name in qat.ARGUMENTS:
            errors.append(field_error(path, "set by TRLConfig.quantization_aware"))
        elif name not in kinds:
            errors.append(
                field_error(
                    path,
                    f"not an argument of TRL's {trl_methods.CONFIG_NAMES[method]} or ModelConfig "
                    "or of this engine",
                )
            )
        elif (problem := _value_problem(kinds[name], value)) is not None:
            errors.append(field_error(path, problem))
    return errors


def _gems_errors(config: types.TRLConfig, where: str) -> list[FieldError]:
    """What keeps ``config.gems_kernels`` from applying."""
    path = f"{where}.gems_kernels"
    if not isinstance(config.gems_kernels, bool):
        return [field_error(path, f"expected a bool, got {config.gems_kernels!r}")]
    overrides = config.overrides if isinstance(config.overrides, dict) else {}
    if config.gems_kernels and overrides.get("use_liger_kernel"):
        return [
            field_error(
                path,
                "Liger's kernels (overrides['use_liger_kernel']) patch the same layers; choose one",
            )
        ]
    if config.gems_kernels and config.quantization_aware is not None:
        return [
            field_error(
                path,
                "not with quantization_aware: its fake-quantized linears are what QAT trains, and "
                "the gems patch computes those layers itself; choose one",
            )
        ]
    return []


class TRL:
    """``BuiltinTrainer(TRLConfig(...))`` on a ``trl-*`` runtime."""

    name = "trl"
    config_type = types.TRLConfig
    module = "trl"
    install = 'pip install "trainer-sdk[trl]"'
    commands: Mapping[str, str] = MappingProxyType({})

    def trainer(
        self, config: types.TRLConfig, initializer: types.Initializer | None
    ) -> EngineTrainer:
        """The runtime's command, and TRL arguments for ``config``; InvalidTrainJobError names
        each bad field."""
        where = "TRLConfig"
        errors = setting_errors(config, where)
        arguments: dict[str, Any] = {
            argument: value
            for name, argument in SETTING_ARGUMENTS.items()
            if (value := getattr(config, name)) is not None
        }
        if config.dtype is not None and isinstance(config.dtype, types.DataType):
            bf16 = config.dtype is types.DataType.BF16
            arguments |= {"bf16": bf16, "dtype": "bfloat16" if bf16 else "float32"}
        if config.device is not None:
            arguments["use_cpu"] = config.device == "cpu"
        if isinstance(config.peft_config, types.LoraConfig):
            lora, lora_errors = _lora_arguments(config.peft_config, where)
            arguments |= lora
            errors += lora_errors
        errors += _gems_errors(config, where)
        if config.gems_kernels is True:
            arguments["gems_kernels"] = True
        method, method_arguments, method_errors = trl_methods.render(config.method, where)
        arguments |= method_arguments
        errors += method_errors
        qat_arguments, qat_errors = qat.render(config, where)
        arguments |= qat_arguments
        errors += qat_errors
        dataset = config.dataset_preprocess_config
        if type(dataset) in trl_methods.DATASETS[method]:
            arguments |= _dataset_arguments(dataset)  # type: ignore[arg-type]
        elif dataset is not None:
            accepted = " or ".join(kind.__name__ for kind in trl_methods.DATASETS[method])
            errors.append(
                field_error(
                    f"{where}.dataset_preprocess_config",
                    f"the {method} method takes a {accepted}, got {type(dataset).__name__}",
                )
            )
        if isinstance(config.overrides, dict):
            errors += _override_errors(config.overrides, argument_kinds(method), method, where)
            arguments |= config.overrides
        if errors:
            raise InvalidTrainJobError(errors)
        args = [part for name, value in arguments.items() for part in _render(name, value)]
        return EngineTrainer(command=None, args=args)

    def run(self, args: Sequence[str]) -> int:
        """Fine-tune in this rank (imports TRL)."""
        from trainer_sdk.training.engines import trl_trainers

        return trl_trainers.main(args)


ENGINE: Final = TRL()
