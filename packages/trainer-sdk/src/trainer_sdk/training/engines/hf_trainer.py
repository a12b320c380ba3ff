"""What every engine built on Hugging Face's ``Trainer`` (TRL's trainers) shares in the pod:
where its checkpoints go, which one it resumes from, and the callback that reports each step.

Checkpoints are the trainer's own (``checkpoint-<step>/``: model or adapter, optimizer,
scheduler, RNG states of every rank, trainer state). The trainer writes them without a commit
point, so once every rank has written its part (a barrier in ``on_save``) rank 0 writes
``COMMITTED`` into the directory, atomically; a start resumes from the newest committed one, and
directories without the marker (a save a crash cut short) are removed first.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any, Final

import torch.distributed as dist
from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

from trainer_sdk.training.engines.reporting import StepReporter

__all__ = ["COMMITTED", "PlatformCallback", "checkpoint_directory", "resume_checkpoint"]

COMMITTED: Final = "COMMITTED"
CHECKPOINT_DIR_ENV: Final = "TRAINER_CHECKPOINT_DIR"
_CHECKPOINT: Final = re.compile(r"^checkpoint-(\d+)$")
# Per-step values the trainers log, as the platform names them.
_REPORTED: Final = {"loss": "loss", "learning_rate": "learning_rate", "grad_norm": "grad_norm"}


def checkpoint_directory(output_path: Path) -> Path:
    """The job's checkpoint volume (``TRAINER_CHECKPOINT_DIR``) when it has one, else
    ``checkpoints/`` in the output directory."""
    configured = os.environ.get(CHECKPOINT_DIR_ENV)
    return Path(configured) if configured else output_path / "checkpoints"


def _steps(directory: Path) -> list[tuple[int, Path]]:
    found = []
    for entry in directory.iterdir() if directory.is_dir() else ():
        match = _CHECKPOINT.match(entry.name)
        if match and entry.is_dir():
            found.append((int(match[1]), entry))
    return sorted(found)


def resume_checkpoint(directory: Path, is_main: bool) -> Path | None:
    """The newest committed checkpoint in ``directory``, or None; the main rank removes the
    uncommitted ones (a save a crash cut short: no rank picks one, so no rank waits for it)."""
    committed = None
    for _, path in _steps(directory):
        if (path / COMMITTED).is_file():
            committed = path
        elif is_main:
            shutil.rmtree(path, ignore_errors=True)
    return committed


def _commit(path: Path) -> None:
    temporary = path / f".{COMMITTED}.tmp"
    with open(temporary, "w") as marker:
        marker.write("complete\n")
        marker.flush()
        os.fsync(marker.fileno())
    os.replace(temporary, path / COMMITTED)
    directory = os.open(path, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


class PlatformCallback(TrainerCallback):
    """Reports each logged step through ``StepReporter`` and commits each checkpoint."""

    def __init__(self) -> None:
        self.reporter: StepReporter | None = None

    def on_train_begin(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **_: Any
    ) -> None:
        """Start the clock at the step training starts (or resumes) from (the main rank reports:
        the job has one progress and one metric history)."""
        if not state.is_world_process_zero:
            return
        self.reporter = StepReporter(state.max_steps)
        self.reporter.start(state.global_step, 0.0)  # TRL counts tokens from each start

    def on_log(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        logs: dict[str, Any] | None = None,
        **_: Any,
    ) -> None:
        """A training log (not the final summary) becomes one step's metrics."""
        logs = logs or {}
        if self.reporter is None or "loss" not in logs:
            return
        values = {name: float(logs[key]) for key, name in _REPORTED.items() if key in logs}
        tokens = logs.get("num_tokens")
        self.reporter.report(
            state.global_step, values, float(tokens) if tokens is not None else None
        )

    def on_save(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **_: Any
    ) -> None:
        """Every rank has written its part of ``checkpoint-<step>``: rank 0 commits it."""
        if dist.is_available() and dist.is_initialized():
            dist.barrier()
        if state.is_world_process_zero:
            _commit(Path(str(args.output_dir)) / f"checkpoint-{state.global_step}")
