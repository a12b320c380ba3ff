"""A search over a TRL fine-tune (``OptimizerClient`` with a ``BuiltinTrainer(TRLConfig)`` trial
template), submit side and pure: which settings a search parameter may name and which values
it may take, and which metrics the engine reports as an objective. ``optimize()`` refuses a
search these rules reject before any trial starts; the pod side turns a trial's parameters
into TRL arguments with ``trl_names.argument_name`` (``trl_trainers.search_arguments``).

A parameter names a TRL argument of the job's method (``learning_rate``, ``lora_r``, DPO's
``beta``, any name ``overrides`` takes) or a ``TRLConfig`` setting that becomes one
(``batch_size``, ``lora_rank``...).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from trainer_sdk import types
from trainer_sdk.training.engines import qat, trl, trl_methods
from trainer_sdk.training.engines.trl_names import argument_name

__all__ = ["METRICS", "metric_problem", "parameter_problem"]

_SET_ELSEWHERE: Final = {
    **{
        name: "set by the runtime (the initializers' and the output's paths)"
        for name in trl.RUNTIME_ARGUMENTS
    },
    **{name: "set by TRLConfig.method" for name in trl_methods.METHOD_ARGUMENTS},
    **{name: "set by TRLConfig.quantization_aware" for name in qat.ARGUMENTS},
}
_COMMON_METRICS: Final = ("loss", "learning_rate", "grad_norm", "tokens_per_second")
_PREFERENCE_METRICS: Final = ("reward_chosen", "reward_rejected", "reward_margin")
METRICS: Final = {
    "sft": _COMMON_METRICS,
    "dpo": (*_COMMON_METRICS, *_PREFERENCE_METRICS, "reward_accuracy"),
    "orpo": (*_COMMON_METRICS, *_PREFERENCE_METRICS, "reward_accuracy"),
    "kto": (*_COMMON_METRICS, *_PREFERENCE_METRICS, "kl"),
    "grpo": (*_COMMON_METRICS, "reward", "reward_std", "kl"),
    "distillation": _COMMON_METRICS,
}
"""What the engine reports each step for each method (``hf_trainer.PlatformCallback``); GRPO
adds ``reward_<function>`` for each reward function."""
_REWARD_FUNCTION_METRIC: Final = re.compile(r"^reward_\w+$")
_BOOLEANS: Final = ("true", "false", "1", "0", "yes", "no")


def _method(config: types.TRLConfig) -> str:
    return trl_methods.render(config.method, "TRLConfig")[0]


def _value_problem(kind: object, choices: Sequence[str] | None) -> str | None:
    """Why a search over ``choices`` (None: a float range) cannot give an argument of ``kind``."""
    if choices is None:
        return (
            None
            if kind == "float"
            else f"a range gives fractions; expected Search.choice({kind} values)"
        )
    for choice in choices:
        if kind == "int":
            ok = re.fullmatch(r"[+-]?\d+", choice) is not None
        elif kind == "float":
            ok = re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", choice) is not None
        elif kind == "bool":
            ok = choice.lower() in _BOOLEANS
        elif isinstance(kind, list):
            ok = choice in kind
        elif kind == "list":
            return "a list argument cannot be a search parameter"
        else:
            ok = True
        if not ok:
            expected = f"one of {kind}" if isinstance(kind, list) else f"of kind {kind}"
            return f"choice {choice!r} is not {expected}"
    return None


def parameter_problem(
    config: types.TRLConfig, parameter: str, choices: Sequence[str] | None
) -> str | None:
    """Why a search parameter over ``choices`` (None: a float range) cannot set a TRL fine-tune
    of ``config``, or None."""
    method = _method(config)
    argument = argument_name(parameter)
    if argument in _SET_ELSEWHERE:
        return _SET_ELSEWHERE[argument]
    kinds = trl.argument_kinds(method)
    if argument not in kinds:
        return (
            f"not a setting of TRL's {trl_methods.CONFIG_NAMES[method]} or ModelConfig or of "
            "this engine; expected a TRLConfig setting (learning_rate, batch_size, lora_rank...) "
            "or a TRL argument of the method (lora_r, beta...)"
        )
    if (argument.startswith("lora_") or argument == "use_dora") and config.peft_config is None:
        return "a LoRA setting, but the trial template trains no adapter (TRLConfig.peft_config)"
    return _value_problem(kinds[argument], choices)


def metric_problem(config: types.TRLConfig, metric: str) -> str | None:
    """Why the engine never reports ``metric`` for ``config``'s method, or None."""
    method = _method(config)
    reported = METRICS[method]
    if metric in reported or (method == "grpo" and _REWARD_FUNCTION_METRIC.match(metric)):
        return None
    if metric.startswith("eval_"):
        return (
            "the TRL engine trains without an eval set, so it reports no eval_ metrics; "
            f"expected one of {list(reported)}"
        )
    return f"the TRL engine's {method} reports no such metric; expected one of {list(reported)}"
