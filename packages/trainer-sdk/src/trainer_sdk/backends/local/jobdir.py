"""The on-disk layout of one local job, so that any client or the CLI sees it.

<root>/<name>/trainjob.json     the TrainJob manifest (as sent to a cluster)
<root>/<name>/runtime.json      the runtime manifest it was built against
<root>/<name>/jobset.json       the JobSet from the runtime framework's Plan
<root>/<name>/plan.json         the local plan compiled from it at submit, which the supervisor runs
<root>/<name>/state.json        JobSet status, TrainJob status, pods (pid, phase, exit code)
<root>/<name>/progress.json     what update_trainjob_status() last wrote
<root>/<name>/metrics/rank-<r>.jsonl  log_metrics() history of rank r (JSON lines)
<root>/<name>/supervisor.pid    the process that runs the job, "PID START_TIME" (supervisor.log:
                                its output)
<root>/<name>/supervisor.lock   locked (flock) for as long as the submitting client or the
                                job's supervisor lives: free and not finished means the job died
<root>/<name>/stop-requested    written by stop_job before it ends the supervisor: the job
                                reads Stopped instead of Deleted
<root>/<name>/logs/<step>.log   each step's output
<root>/<name>/pods/<pod>/       each pod's working directory

A job's directory is ``0700`` and the files the backend writes are ``0600``: a job's env values and
output stay private to its user.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

__all__ = [
    "JobDir",
    "hold_lock",
    "lock_held",
    "make_private_dir",
    "open_private",
    "read_json",
    "write_json",
    "write_text",
]

_SAFE = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?")
MAX_NAME_LENGTH = 253  # a DNS subdomain; also below the file name limit of 255
PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600


def make_private_dir(path: Path) -> None:
    """``mkdir -p`` with the directories it creates readable by this user only."""
    path.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)


def open_private(path: Path) -> IO[bytes]:
    """``path`` opened for appending, created ``0600`` (its directory ``0700``) if new."""
    make_private_dir(path.parent)
    return os.fdopen(
        os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, PRIVATE_FILE_MODE),
        "ab",
    )


def write_text(path: Path, text: str, durable: bool = False) -> None:
    """Write atomically (readers see the old or the new text, never half of it), ``0600``;
    ``durable``: on disk before it replaces the old text (fsync of the file and its directory),
    so that a crash leaves one or the other, never an empty file."""
    make_private_dir(path.parent)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(handle, "w") as stream:
        stream.write(text)
        if durable:
            stream.flush()
            os.fsync(stream.fileno())
    os.replace(temporary, path)
    if durable:
        directory = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)


def write_json(path: Path, document: Any, durable: bool = False) -> None:
    """Write ``document`` as JSON with ``write_text``."""
    write_text(path, json.dumps(document, indent=1, default=str), durable)


def read_json(path: Path) -> Any:
    """The document at ``path``."""
    return json.loads(path.read_text())


@dataclass(frozen=True)
class JobDir:
    """Paths of one job under the backend's root."""

    root: Path
    name: str

    def __post_init__(self) -> None:
        if len(self.name) > MAX_NAME_LENGTH or not _SAFE.fullmatch(self.name):
            raise ValueError(
                f"name: expected a lower-case DNS name of at most {MAX_NAME_LENGTH} characters, "
                f"got {self.name[:80]!r}{'...' if len(self.name) > 80 else ''}"
            )

    @property
    def path(self) -> Path:
        return self.root / self.name

    @property
    def trainjob(self) -> Path:
        return self.path / "trainjob.json"

    @property
    def runtime(self) -> Path:
        return self.path / "runtime.json"

    @property
    def jobset(self) -> Path:
        return self.path / "jobset.json"

    @property
    def plan(self) -> Path:
        return self.path / "plan.json"

    @property
    def state(self) -> Path:
        return self.path / "state.json"

    @property
    def progress(self) -> Path:
        return self.path / "progress.json"

    @property
    def metrics(self) -> Path:
        return self.path / "metrics"

    @property
    def supervisor_pid(self) -> Path:
        return self.path / "supervisor.pid"

    @property
    def supervisor_lock(self) -> Path:
        return self.path / "supervisor.lock"

    @property
    def stop_requested(self) -> Path:
        return self.path / "stop-requested"

    @property
    def supervisor_log(self) -> Path:
        return self.path / "supervisor.log"

    def log(self, step: str) -> Path:
        return self.path / "logs" / f"{step}.log"

    def pod_dir(self, pod: str) -> Path:
        return self.path / "pods" / pod

    def exists(self) -> bool:
        return self.trainjob.is_file()


def hold_lock(path: Path) -> int:
    """Create and lock ``path`` (exclusive); the descriptor holds the lock until every copy of it
    is closed, i.e. until its holder and the processes it handed it to are gone."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, PRIVATE_FILE_MODE)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


def lock_held(path: Path) -> bool:
    """Whether someone holds ``path`` locked by ``hold_lock`` (readers may probe side by side)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)
    return False
