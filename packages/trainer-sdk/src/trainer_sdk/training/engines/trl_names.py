"""The names a ``TRLConfig`` setting and the TRL argument it becomes go by: shared by the submit
side (``trl``: a config rendered as arguments; ``trl_search``: a search parameter checked) and
the pod side (``trl_trainers``: a trial's parameters parsed), so neither imports the other."""

from __future__ import annotations

from typing import Final

__all__ = ["SETTING_ARGUMENTS", "argument_name"]

SETTING_ARGUMENTS: Final = {
    "batch_size": "per_device_train_batch_size",
    "epochs": "num_train_epochs",
    "learning_rate": "learning_rate",
    "max_steps": "max_steps",
    "gradient_accumulation_steps": "gradient_accumulation_steps",
    "max_seq_len": "max_length",
    "save_steps": "save_steps",
    "seed": "seed",
}
"""``EngineSettings``' and upstream's fields -> TRL's argument names."""
_ALIASES: Final = {**SETTING_ARGUMENTS, "lora_rank": "lora_r"}
"""``TRLConfig``'s setting names -> the TRL arguments they become (``LoraConfig``'s
``lora_alpha`` and ``lora_dropout`` keep their names)."""


def argument_name(parameter: str) -> str:
    """The TRL argument a search parameter sets (``lora_rank`` -> ``lora_r``)."""
    return _ALIASES.get(parameter, parameter)
