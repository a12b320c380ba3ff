"""Quantization-aware training on the TRL engine, submit side (pure): ``TRLConfig.
quantization_aware`` (a ``QAT``) -> the engine's ``--qat_scheme`` and ``--qat_group_size``, and
one error per bad setting. The pod side (torchao) is ``qat_model``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from trainer_sdk import types
from trainer_sdk.training.engines.settings import field_error, whole_number_problem

if TYPE_CHECKING:
    from trainer_api import FieldError

__all__ = ["ARGUMENTS", "SCHEMES", "render"]

SCHEMES: Final = ("int8-dynamic-act-int4-weight", "int4-weight-only")
ARGUMENTS: Final = frozenset({"qat_scheme", "qat_group_size"})
"""The engine's arguments ``TRLConfig.quantization_aware`` sets; ``overrides`` may not."""


def render(config: types.TRLConfig, where: str) -> tuple[dict[str, Any], list[FieldError]]:
    """The QAT arguments of ``config`` (none without ``quantization_aware``), and one error per
    bad setting (at ``where.quantization_aware.<field>``, or at the field QAT rules out)."""
    qat = config.quantization_aware
    path = f"{where}.quantization_aware"
    if qat is None:
        return {}, []
    if not isinstance(qat, types.QAT):
        return {}, [field_error(path, f"expected a QAT, got {type(qat).__name__}")]
    errors = []
    if qat.scheme not in SCHEMES:
        problem = f"expected one of {list(SCHEMES)}, got {qat.scheme!r}"
        errors.append(field_error(f"{path}.scheme", problem))
    if (wrong := whole_number_problem(qat.group_size, 1)) is not None:
        errors.append(field_error(f"{path}.group_size", wrong))
    if config.method is not None:
        problem = "quantization_aware trains by supervised fine-tuning: leave the method unset"
        errors.append(field_error(f"{where}.method", problem))
    if config.peft_config is not None:
        problem = "quantization_aware trains every weight it quantizes: leave LoRA off"
        errors.append(field_error(f"{where}.peft_config", problem))
    return {"qat_scheme": qat.scheme, "qat_group_size": qat.group_size}, errors
