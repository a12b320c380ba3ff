"""The settings every engine's config shares, checked in one place (submit side, pure).

``setting_errors`` checks the fields of ``EngineSettings`` and upstream's shared ones (``dtype``,
``batch_size``, ``epochs``, ``num_nodes``, ``peft_config``); each engine adds its own rules and
turns the values into its own arguments. Errors are collected, one per field, at the path the
user wrote (``TRLConfig.learning_rate``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from trainer_sdk import types

if TYPE_CHECKING:
    from trainer_api import FieldError

__all__ = ["DEVICES", "field_error", "setting_errors"]

DEVICES: Final = ("cpu", "cuda")


def field_error(path: str, message: str) -> FieldError:
    """A ``trainer_api.FieldError`` (imported on first use: the API models are the client's
    slowest import, and reading jobs never needs them)."""
    from trainer_api import FieldError

    return FieldError(path, message)


def _whole(minimum: int) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            return f"expected a whole number of at least {minimum}, got {value!r}"
        return None

    return check


def _positive_number(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return f"expected a positive number, got {value!r}"
    return None if value > 0 else f"expected a positive number, got {value!r}"


def _probability(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
        return f"expected a number in [0, 1), got {value!r}"
    return None


def _device(value: Any) -> str | None:
    return None if value in DEVICES else f"expected one of {list(DEVICES)}, got {value!r}"


def _dtype(value: Any) -> str | None:
    if isinstance(value, types.DataType):
        return None
    accepted = ", ".join(f"DataType.{member.name}" for member in types.DataType)
    return f"expected a DataType ({accepted}), got {value!r}"


def _overrides(value: Any) -> str | None:
    if isinstance(value, dict) and all(isinstance(key, str) and key for key in value):
        return None
    return f"expected a dict of setting names to values, got {value!r}"


def _modules(value: Any) -> str | None:
    if isinstance(value, list) and value and all(isinstance(m, str) and m for m in value):
        return None
    return f"expected a non-empty list of module names, got {value!r}"


_RULES: Final[dict[str, Callable[[Any], str | None]]] = {
    "dtype": _dtype,
    "batch_size": _whole(1),
    "epochs": _whole(1),
    "num_nodes": _whole(1),
    "learning_rate": _positive_number,
    "max_steps": _whole(1),
    "gradient_accumulation_steps": _whole(1),
    "max_seq_len": _whole(1),
    "device": _device,
    "save_steps": _whole(1),
    "seed": _whole(0),
    "overrides": _overrides,
}
_LORA_RULES: Final[dict[str, Callable[[Any], str | None]]] = {
    "lora_rank": _whole(1),
    "lora_alpha": _positive_number,
    "lora_dropout": _probability,
    "lora_attn_modules": _modules,
}


def setting_errors(config: Any, where: str) -> list[FieldError]:
    """One error per shared setting of ``config`` that is set and wrong, at ``where.<field>``."""
    errors = [
        field_error(f"{where}.{name}", problem)
        for name, check in _RULES.items()
        if getattr(config, name, None) is not None
        and (problem := check(getattr(config, name))) is not None
    ]
    peft = getattr(config, "peft_config", None)
    if peft is not None and not isinstance(peft, types.LoraConfig):
        errors.append(
            field_error(f"{where}.peft_config", f"expected a LoraConfig, got {type(peft).__name__}")
        )
    elif peft is not None:
        errors += [
            field_error(f"{where}.peft_config.{name}", problem)
            for name, check in _LORA_RULES.items()
            if getattr(peft, name) is not None and (problem := check(getattr(peft, name)))
        ]
    return errors
