"""Where checkpoints live on disk, and which of them are complete.

One directory per saved step, complete only once its commit marker exists::

    <dir>/step-000000100/
        tensors/        torch.distributed.checkpoint files (modules, optimizers, tensor dicts)
        deepspeed/      a DeepSpeed engine's own save_checkpoint output
        ranks/rank-00000.pt   each rank's RNG states and small stateful objects
        COMMITTED       JSON (step, time, world size, attempt), written last, atomically
    <dir>/resumes.jsonl one line per restore that found a checkpoint

A directory without ``COMMITTED`` (a save that was cut short), or whose marker cannot be read or
trusted (torn, foreign, naming another step, not a plain file), is never returned and is removed
by the next save; a symbolic link named like a step directory is neither followed nor removed.
Only rank 0 writes markers and removes directories.
"""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
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
    "remove",
    "step_dir",
]

CHECKPOINT_DIR_ENV: Final = "TRAINER_CHECKPOINT_DIR"
COMMIT_MARKER: Final = "COMMITTED"
RESUMES_FILE: Final = "resumes.jsonl"
_PREFIX: Final = "step-"
_MARKER_LIMIT: Final = 64 * 1024

log = logging.getLogger(__name__)


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


def _step_of(name: str) -> int | None:
    digits = name[len(_PREFIX) :]
    if not name.startswith(_PREFIX) or not digits.isdigit():
        return None
    return int(digits)


def _step_dirs(root: Path) -> list[tuple[int, Path]]:
    """The step directories under ``root`` (real directories: a symbolic link named like one
    is not a checkpoint of this directory, and is neither followed nor removed)."""
    try:
        entries = list(os.scandir(root))
    except (FileNotFoundError, NotADirectoryError):
        return []
    found = []
    for entry in entries:
        step = _step_of(entry.name)
        if step is None:
            continue
        if entry.is_symlink():
            log.warning("%s: a symbolic link, not a checkpoint; ignored", entry.path)
        elif entry.is_dir(follow_symlinks=False):
            found.append((step, Path(entry.path)))
    return sorted(found)


def _read_small(path: Path) -> bytes:
    """The bytes of the plain file ``path`` (not a link, FIFO or device: those are refused
    without blocking), at most ``_MARKER_LIMIT`` of them."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(descriptor, "rb") as stream:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise ValueError("not a plain file")
        data = stream.read(_MARKER_LIMIT + 1)
    if len(data) > _MARKER_LIMIT:
        raise ValueError(f"larger than {_MARKER_LIMIT} bytes")
    return data


def _read_marker(path: Path, step: int) -> Checkpoint | None:
    """The checkpoint whose directory is ``path`` (of ``step``), None when it has no marker;
    ValueError saying what is wrong with a marker that cannot be trusted."""
    try:
        data = _read_small(path / COMMIT_MARKER)
    except FileNotFoundError:
        return None
    except OSError as error:  # a directory, a dangling link, unreadable
        raise ValueError(error.strerror or str(error)) from None
    try:
        marker = json.loads(data)
        checkpoint = Checkpoint(
            step=_integer(marker["step"], 0),
            path=path,
            saved_at=float(marker["saved_at"]),
            world_size=_integer(marker["world_size"], 1),
            attempt=_integer(marker.get("attempt", 0), 0),
        )
    except (ValueError, TypeError, KeyError, AttributeError) as error:
        raise ValueError(f"not a commit marker ({type(error).__name__}: {error})") from None
    if checkpoint.step != step:
        raise ValueError(f"names step {checkpoint.step}, in the directory of step {step}")
    if not math.isfinite(checkpoint.saved_at):
        raise ValueError(f"saved_at is {checkpoint.saved_at}")
    return checkpoint


def _integer(value: object, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"expected an integer >= {least}, got {value!r}")
    return value


def checkpoints(directory: str | os.PathLike[str]) -> list[Checkpoint]:
    """The complete checkpoints under ``directory``, oldest step first (none if it is absent).
    A directory whose commit marker cannot be read or trusted is not one (logged, naming it)."""
    found = []
    for step, path in _step_dirs(Path(directory)):
        try:
            checkpoint = _read_marker(path, step)
        except ValueError as error:
            log.warning("%s: %s; not a complete checkpoint", path / COMMIT_MARKER, error)
            continue
        if checkpoint is not None:
            found.append(checkpoint)
    return found


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


def remove(path: Path) -> None:
    """Remove the step directory ``path`` (a symbolic link in its place: the link only)."""
    if path.is_symlink():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path, onerror=_gone_is_fine)


def _gone_is_fine(
    function: Callable[..., Any],
    path: str,
    info: tuple[type[BaseException], BaseException, TracebackType],
) -> None:
    """``rmtree``'s error handler: an entry another process removed first is not an error."""
    if not isinstance(info[1], FileNotFoundError):
        raise info[1]


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
    for _, path in _step_dirs(directory):
        if path not in keep:
            shutil.rmtree(path, onerror=_gone_is_fine)
            removed.append(path)
    return removed


def record_resume(directory: Path, step: int, attempt: int) -> None:
    """Append one restore to the directory's resume log. A log that cannot be written (a full
    volume) is logged as a warning: the restore it records has happened and goes on."""
    line = json.dumps({"step": step, "time": time.time(), "attempt": attempt})
    try:
        with open(directory / RESUMES_FILE, "a") as handle:
            handle.write(line + "\n")
    except OSError as error:
        log.warning(
            "%s: the restore of step %d was not recorded: %s", directory / RESUMES_FILE, step, error
        )


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
            resumes.append(Resume(int(entry["step"]), float(entry["time"]), int(entry["attempt"])))
        except (ValueError, TypeError, KeyError):  # a torn or foreign line
            continue
    return resumes
