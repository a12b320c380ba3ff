"""Where checkpoints live on disk, and which of them are complete.

One directory per saved step, complete only once its commit marker exists::

    <dir>/step-000000100/
        tensors/        torch.distributed.checkpoint files (modules, optimizers, tensor dicts)
        deepspeed/      a DeepSpeed engine's own save_checkpoint output
        ranks/rank-00000.pt   each rank's RNG states and small stateful objects
        COMMITTED       JSON (step, time, world size, attempt), written last, atomically
    <dir>/resumes.jsonl one line per restore that found a checkpoint

A directory without ``COMMITTED`` (a save that was cut short) is never returned and is removed
by the next commit. Only rank 0 writes markers and removes directories.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

__all__ = [
    "CHECKPOINT_DIR_ENV",
    "COMMIT_MARKER",
    "RESUMES_FILE",
    "Checkpoint",
    "Resume",
    "checkpoints",
    "commit",
    "latest",
    "prune",
    "rank_file",
    "read_resumes",
    "record_resume",
    "step_dir",
]

CHECKPOINT_DIR_ENV: Final = "TRAINER_CHECKPOINT_DIR"
COMMIT_MARKER: Final = "COMMITTED"
RESUMES_FILE: Final = "resumes.jsonl"
_PREFIX: Final = "step-"


@dataclass(frozen=True)
class Checkpoint:
    """A complete checkpoint: its step, directory, when it was committed (seconds since the
    epoch), the world size that saved it and the attempt (JobSet restart) that saved it."""

    step: int
    path: Path
    saved_at: float
    world_size: int
    attempt: int

    def age(self, now: float | None = None) -> float:
        """Seconds since the commit."""
        return (time.time() if now is None else now) - self.saved_at


@dataclass(frozen=True)
class Resume:
    """One restore that found a checkpoint: at ``time``, attempt ``attempt`` resumed from
    ``step``."""

    step: int
    time: float
    attempt: int


def step_dir(directory: Path, step: int) -> Path:
    """The directory of ``step``'s checkpoint."""
    return directory / f"{_PREFIX}{step:09d}"


def rank_file(path: Path, rank: int) -> Path:
    """Rank ``rank``'s own part of the checkpoint at ``path``."""
    return path / "ranks" / f"rank-{rank:05d}.pt"


def _step_of(path: Path) -> int | None:
    digits = path.name[len(_PREFIX) :]
    if not path.name.startswith(_PREFIX) or not digits.isdigit():
        return None
    return int(digits)


def _read_marker(path: Path) -> Checkpoint | None:
    try:
        marker = json.loads((path / COMMIT_MARKER).read_text())
    except FileNotFoundError:
        return None
    return Checkpoint(
        step=int(marker["step"]),
        path=path,
        saved_at=float(marker["saved_at"]),
        world_size=int(marker["world_size"]),
        attempt=int(marker.get("attempt", 0)),
    )


def checkpoints(directory: str | os.PathLike[str]) -> list[Checkpoint]:
    """The complete checkpoints under ``directory``, oldest step first (none if it is absent)."""
    root = Path(directory)
    if not root.is_dir():
        return []
    found = []
    for child in root.iterdir():
        if _step_of(child) is not None and child.is_dir():
            checkpoint = _read_marker(child)
            if checkpoint is not None:
                found.append(checkpoint)
    return sorted(found, key=lambda checkpoint: checkpoint.step)


def latest(directory: str | os.PathLike[str] | None = None) -> Checkpoint | None:
    """The complete checkpoint with the highest step under ``directory`` (default: the
    ``TRAINER_CHECKPOINT_DIR`` env), or None."""
    if directory is None:
        directory = os.environ.get(CHECKPOINT_DIR_ENV)
        if not directory:
            return None
    found = checkpoints(directory)
    return found[-1] if found else None


def _write_atomically(path: Path, text: str) -> None:
    temporary = path.with_name(f".{path.name}.tmp")
    with open(temporary, "w") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def commit(path: Path, step: int, world_size: int, attempt: int) -> Checkpoint:
    """Mark the checkpoint at ``path`` complete (every rank has written its part)."""
    saved_at = time.time()
    marker: dict[str, Any] = {
        "step": step,
        "saved_at": saved_at,
        "world_size": world_size,
        "attempt": attempt,
    }
    _write_atomically(path / COMMIT_MARKER, json.dumps(marker))
    return Checkpoint(step, path, saved_at, world_size, attempt)


def prune(directory: Path, keep_last: int | None, in_flight: Path | None = None) -> list[Path]:
    """Remove all but the newest ``keep_last`` complete checkpoints (all kept when None) and
    every incomplete one except ``in_flight``; the removed directories."""
    complete = checkpoints(directory)
    keep = {checkpoint.path for checkpoint in complete}
    if keep_last is not None:
        keep = {checkpoint.path for checkpoint in complete[-keep_last:]}
    if in_flight is not None:
        keep.add(in_flight)
    removed = []
    for child in sorted(directory.iterdir()):
        if _step_of(child) is not None and child.is_dir() and child not in keep:
            shutil.rmtree(child)
            removed.append(child)
    return removed


def record_resume(directory: Path, step: int, attempt: int) -> None:
    """Append one restore to the directory's resume log."""
    line = json.dumps({"step": step, "time": time.time(), "attempt": attempt})
    with open(directory / RESUMES_FILE, "a") as handle:
        handle.write(line + "\n")


def read_resumes(directory: str | os.PathLike[str]) -> list[Resume]:
    """The restores recorded under ``directory``, in order (a torn last line is skipped)."""
    try:
        lines = (Path(directory) / RESUMES_FILE).read_text().splitlines()
    except FileNotFoundError:
        return []
    resumes = []
    for line in lines:
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        resumes.append(Resume(int(entry["step"]), float(entry["time"]), int(entry["attempt"])))
    return resumes
