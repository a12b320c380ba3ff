"""Checkpoints for training code: save a state every N steps, resume from the latest complete
one after a restart, stop cleanly on SIGTERM. Standard library and torch only; import it in any
rank::

    from trainer_sdk import checkpoint

    ckpt = checkpoint.Checkpointer({"model": model, "optimizer": opt, "data": dataset}, every=100)
    for step in range(ckpt.restore(), total_steps):
        train_one_step()
        ckpt.step(step + 1)
"""

from trainer_sdk.checkpoint._checkpointer import ATTEMPT_ENV, PREEMPTED_EXIT_CODE, Checkpointer
from trainer_sdk.checkpoint._layout import (
    CHECKPOINT_DIR_ENV,
    Checkpoint,
    Resume,
    checkpoints,
    latest,
    read_resumes,
)

__all__ = [
    "ATTEMPT_ENV",
    "CHECKPOINT_DIR_ENV",
    "PREEMPTED_EXIT_CODE",
    "Checkpoint",
    "Checkpointer",
    "Resume",
    "checkpoints",
    "latest",
    "read_resumes",
]
