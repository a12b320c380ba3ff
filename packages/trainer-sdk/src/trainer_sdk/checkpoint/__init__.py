"""Checkpointing, in one place: training code saves a state every N steps, resumes from the latest
complete one after a restart and stops cleanly on SIGTERM (``Checkpointer``, standard library and
torch only); ``status`` reads a job's checkpoints back for the client (no torch); ``volume`` is the
``train()`` option that gives a job its checkpoint volume. Import it in any rank::

    from trainer_sdk import checkpoint

    ckpt = checkpoint.Checkpointer({"model": model, "optimizer": opt, "data": dataset}, every=100)
    for step in range(ckpt.restore(), total_steps):
        train_one_step()
        ckpt.step(step + 1)

The names below are imported on first use (PEP 562), so that a client reading ``status`` does not
import torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the same names, eagerly, for type checkers
    from trainer_sdk.checkpoint._checkpointer import Checkpointer, CheckpointError
    from trainer_sdk.checkpoint._data_position import DataPosition, ResumableSampler
    from trainer_sdk.checkpoint._layout import (
        CHECKPOINT_DIR_ENV,
        Checkpoint,
        Resume,
        checkpoints,
        latest,
        read_resumes,
    )
    from trainer_sdk.checkpoint.status import ATTEMPT_ENV, PREEMPTED_EXIT_CODE

_EXPORTS: dict[str, tuple[str, ...]] = {
    "trainer_sdk.checkpoint._checkpointer": ("CheckpointError", "Checkpointer"),
    "trainer_sdk.checkpoint._data_position": ("DataPosition", "ResumableSampler"),
    "trainer_sdk.checkpoint._layout": (
        "CHECKPOINT_DIR_ENV",
        "Checkpoint",
        "Resume",
        "checkpoints",
        "latest",
        "read_resumes",
    ),
    "trainer_sdk.checkpoint.status": ("ATTEMPT_ENV", "PREEMPTED_EXIT_CODE"),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}


def __getattr__(name: str) -> Any:
    """The exported ``name``, imported from its module the first time it is asked for."""
    if name not in _MODULE_OF:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_MODULE_OF[name]), name)
    globals()[name] = value
    return value


__all__ = [
    "ATTEMPT_ENV",
    "CHECKPOINT_DIR_ENV",
    "PREEMPTED_EXIT_CODE",
    "Checkpoint",
    "CheckpointError",
    "Checkpointer",
    "DataPosition",
    "ResumableSampler",
    "Resume",
    "checkpoints",
    "latest",
    "read_resumes",
]
