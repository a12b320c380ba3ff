"""The on-disk layout of one local job, so that any client or the CLI sees it.

<root>/<name>/trainjob.json     the TrainJob as admitted at submit (API-defaulted, as a cluster
                                stores it)
<root>/<name>/runtime.json      the runtime manifest it was built against
<root>/<name>/jobset.json       the JobSet from the runtime framework's Plan
<root>/<name>/plan.json         the local plan compiled from it at submit, which the supervisor runs
<root>/<name>/state.json        JobSet status, facts, TrainJob status, pods (pid, phase, exit
                                code), events
<root>/<name>/end-note          4 KiB allocated at submit: why the run ended, written in place
                                when nothing else can be written (a full disk: ``facts``)
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
import os
import re
from dataclasses import dataclass
from pathlib import Path

from trainer_sdk.private_files import PRIVATE_FILE_MODE

__all__ = ["JobDir", "hold_lock", "lock_held"]

_SAFE = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?")
MAX_NAME_LENGTH = 253  # a DNS subdomain; also below the file name limit of 255


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

    @property
    def end_note(self) -> Path:
        return self.path / "end-note"

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
