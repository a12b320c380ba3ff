"""The TRL engine's training methods, submit side (pure): ``TRLConfig.method`` -> the method's
name and TRL arguments, and which data set preprocessing each method takes.

A method is one of TRL's trainers with its config (``SFTTrainer``/``SFTConfig``,
``DPOTrainer``/``DPOConfig``, ``KTOTrainer``/``KTOConfig``, ``ORPOTrainer``/``ORPOConfig``
(experimental in TRL), ``GRPOTrainer``/``GRPOConfig``,
``DistillationTrainer``/``DistillationConfig``);
the pod side (``trl_trainers``) runs the trainer that ``--method`` names.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final

from trainer_sdk import types
from trainer_sdk.manifests import storage
from trainer_sdk.training.engines.rewards import reward_spec
from trainer_sdk.training.engines.settings import (
    field_error,
    positive_number_problem,
    whole_number_problem,
)

if TYPE_CHECKING:
    from trainer_api import FieldError

__all__ = ["CONFIG_NAMES", "DATASETS", "METHODS", "METHOD_ARGUMENTS", "render"]

METHODS: Final = ("sft", "dpo", "kto", "orpo", "grpo", "distillation")
CONFIG_NAMES: Final = {
    "sft": "SFTConfig",
    "dpo": "DPOConfig",
    "kto": "KTOConfig",
    "orpo": "ORPOConfig",
    "grpo": "GRPOConfig",
    "distillation": "DistillationConfig",
}
"""The TRL config whose arguments each method takes (with ``ModelConfig``)."""
METHOD_ARGUMENTS: Final = frozenset({"method", "reward_functions", "teacher_storage_uri"})
"""The engine's arguments ``TRLConfig.method`` sets; ``overrides`` may not."""
_PREFERENCES: Final = (types.PreferenceDataset,)
DATASETS: Final[dict[str, tuple[type[Any], ...]]] = {
    "sft": (types.TorchTuneInstructDataset, types.ChatDataset),
    "dpo": _PREFERENCES,
    "kto": _PREFERENCES,
    "orpo": _PREFERENCES,
    "grpo": (types.PromptDataset,),
    "distillation": (types.PromptDataset,),
}
"""The ``dataset_preprocess_config`` types each method takes."""


def _numbers(method: Any, names: tuple[str, ...], where: str) -> list[FieldError]:
    return [
        field_error(f"{where}.{name}", problem)
        for name in names
        if getattr(method, name) is not None
        and (problem := positive_number_problem(getattr(method, name))) is not None
    ]


def _dpo(method: types.DPO, where: str) -> tuple[dict[str, Any], list[FieldError]]:
    errors = _numbers(method, ("beta",), where)
    arguments: dict[str, Any] = {"beta": method.beta} if method.beta is not None else {}
    if method.loss_type is not None:
        if isinstance(method.loss_type, str) and method.loss_type:
            arguments["loss_type"] = [method.loss_type]
        else:
            problem = f"expected the name of a TRL DPO loss, got {method.loss_type!r}"
            errors.append(field_error(f"{where}.loss_type", problem))
    if not isinstance(method.reference_model, bool):
        problem = f"expected True or False, got {method.reference_model!r}"
        errors.append(field_error(f"{where}.reference_model", problem))
    elif not method.reference_model:
        arguments["precompute_ref_log_probs"] = True
    return arguments, errors


def _kto(method: types.KTO, where: str) -> tuple[dict[str, Any], list[FieldError]]:
    names = ("beta", "desirable_weight", "undesirable_weight")
    arguments = {name: getattr(method, name) for name in names if getattr(method, name) is not None}
    return arguments, _numbers(method, names, where)


def _orpo(method: types.ORPO, where: str) -> tuple[dict[str, Any], list[FieldError]]:
    arguments = {"beta": method.beta} if method.beta is not None else {}
    return arguments, _numbers(method, ("beta",), where)


def _grpo(method: types.GRPO, where: str) -> tuple[dict[str, Any], list[FieldError]]:
    errors = []
    specs, weights = [], []
    rewards = method.rewards
    if not isinstance(rewards, list) or not rewards:
        problem = f"expected a non-empty list of rewards, got {rewards!r}"
        errors.append(field_error(f"{where}.rewards", problem))
        rewards = []
    for index, reward in enumerate(rewards):
        spec, reward_errors = reward_spec(reward, f"{where}.rewards[{index}]")
        specs.append(spec)
        weights.append(getattr(reward, "weight", None))
        errors += reward_errors
    arguments: dict[str, Any] = {
        "reward_functions": json.dumps(specs),
        "reward_weights": weights,
    }
    if method.num_generations is not None:
        arguments["num_generations"] = method.num_generations
        if (wrong := whole_number_problem(method.num_generations, 2)) is not None:
            errors.append(field_error(f"{where}.num_generations", wrong))
    generation, generation_errors = _generation(method, where)
    arguments |= generation
    errors += generation_errors
    if method.beta is not None:
        arguments["beta"] = method.beta
        if method.beta != 0:
            errors += _numbers(method, ("beta",), where)
    return arguments, errors


def _generation(method: Any, where: str) -> tuple[dict[str, Any], list[FieldError]]:
    """``max_new_tokens`` and ``temperature``, as GRPO and distillation take them."""
    arguments: dict[str, Any] = {}
    errors = []
    if method.max_new_tokens is not None:
        arguments["max_completion_length"] = method.max_new_tokens
        if (wrong := whole_number_problem(method.max_new_tokens, 1)) is not None:
            errors.append(field_error(f"{where}.max_new_tokens", wrong))
    if method.temperature is not None:
        arguments["temperature"] = method.temperature
        errors += _numbers(method, ("temperature",), where)
    return arguments, errors


_TEACHER_SCHEMES: Final = ("hf://", "s3://", storage.FILE_SCHEME)
"""What the pod side's ``fetch`` reads a teacher from."""


def _distillation(
    method: types.Distillation, where: str
) -> tuple[dict[str, Any], list[FieldError]]:
    arguments, errors = _generation(method, where)
    teacher = method.teacher
    if isinstance(teacher, (types.HuggingFaceModelInitializer, types.S3ModelInitializer)):
        uri = storage.trainjob_uri(teacher.storage_uri)
        arguments["teacher_storage_uri"] = uri
        if not uri.startswith(_TEACHER_SCHEMES):
            problem = (
                "expected hf://, s3:// or a path: the trainer's main rank fetches the teacher "
                f"itself, and no claim is mounted there; got {teacher.storage_uri!r}"
            )
            errors.append(field_error(f"{where}.teacher.storage_uri", problem))
    else:
        problem = (
            "expected a HuggingFaceModelInitializer or S3ModelInitializer, got "
            f"{type(teacher).__name__}"
        )
        errors.append(field_error(f"{where}.teacher", problem))
    if method.beta is not None:
        arguments["beta"] = method.beta
        if not isinstance(method.beta, (int, float)) or not 0 <= method.beta <= 1:
            problem = f"expected a number in [0, 1], got {method.beta!r}"
            errors.append(field_error(f"{where}.beta", problem))
    return arguments, errors


_RENDERERS: Final[tuple[tuple[type[Any], str, Any], ...]] = (
    (types.DPO, "dpo", _dpo),
    (types.KTO, "kto", _kto),
    (types.ORPO, "orpo", _orpo),
    (types.GRPO, "grpo", _grpo),
    (types.Distillation, "distillation", _distillation),
)
"""Each method type, its name, and the function that turns it into TRL arguments."""


def render(method: object, where: str) -> tuple[str, dict[str, Any], list[FieldError]]:
    """``method``'s name and TRL arguments (``--method`` among them), and one error per bad
    setting at ``where.method.<field>``."""
    path = f"{where}.method"
    if method is None:
        return "sft", {}, []
    for kind, name, arguments_of in _RENDERERS:
        if isinstance(method, kind):
            arguments, errors = arguments_of(method, path)
            return name, {"method": name, **arguments}, errors
    problem = (
        "expected None (supervised fine-tuning), DPO, KTO, ORPO, GRPO or Distillation, got "
        f"{type(method).__name__}"
    )
    return "sft", {}, [field_error(path, problem)]
