"""Which processes belong to a job, proven, and how they are ended (Linux ``/proc``).

A PID alone proves nothing: once its process has been reaped, the kernel may give the number to
any other process. A process is named here by its PID *and* its start time (field 22 of
``/proc/PID/stat``, clock ticks after boot), which no two processes share. A signal goes through a
pidfd opened *before* the start time is compared, so it reaches exactly the process that was
compared, or nobody.

A job's processes are found two ways, both verifiable: the descendants of processes the caller
holds (its own children), and every process whose initial environment carries the job's token
(``TRAINER_SDK_JOB_TOKEN``, a random value written only to the job's private directory), which
finds processes that left the tree (double forks, ``setsid`` grandchildren) and survives the
supervisor.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import time
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from pathlib import Path

from trainer_sdk.backends.local.supervisor import cgroups

__all__ = [
    "JOB_TOKEN_ENV",
    "ProcessIdentity",
    "become_subreaper",
    "find",
    "reap_adopted",
    "terminate",
]

JOB_TOKEN_ENV = "TRAINER_SDK_JOB_TOKEN"
"""Every process a job starts carries this variable; its value names the job (and scope)."""
_PROC = Path("/proc")
_PR_SET_CHILD_SUBREAPER = 36
POLL_SECONDS = 0.05
KILL_TIMEOUT_SECONDS = 10.0


@dataclass(frozen=True)
class _Stat:
    ppid: int
    state: str
    start_time: int


def _stat(pid: int) -> _Stat | None:
    """``/proc/PID/stat``'s parent, state and start time; None when there is no such process."""
    try:
        text = (_PROC / str(pid) / "stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    fields = text[text.rindex(")") + 2 :].split()  # the command name may hold spaces and ')'
    return _Stat(ppid=int(fields[1]), state=fields[0], start_time=int(fields[19]))


@dataclass(frozen=True)
class ProcessIdentity:
    """One process, for as long as it exists: its PID and its start time."""

    pid: int
    start_time: int

    @classmethod
    def of(cls, pid: int) -> ProcessIdentity | None:
        """The process that has ``pid`` now (None: none, or a zombie)."""
        stat = _stat(pid)
        if stat is None or stat.state in ("Z", "X"):
            return None
        return cls(pid, stat.start_time)

    @classmethod
    def parse(cls, text: str) -> ProcessIdentity | None:
        """``"PID START_TIME"`` as ``str()`` writes it; None for anything else (no proof)."""
        parts = text.split()
        if len(parts) != 2 or not all(part.isdigit() for part in parts):
            return None
        return cls(int(parts[0]), int(parts[1]))

    def __str__(self) -> str:
        return f"{self.pid} {self.start_time}"

    def alive(self) -> bool:
        """Whether this very process still runs (not a zombie, not a new process with its PID)."""
        return ProcessIdentity.of(self.pid) == self

    def send(self, signum: int) -> bool:
        """Signal this process if it is still this process; whether it was signalled."""
        try:
            pidfd = os.pidfd_open(self.pid)
        except ProcessLookupError:
            return False
        except OSError:  # no pidfds (kernel < 5.3): compare, then signal by PID
            if not self.alive():
                return False
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signum)
                return True
            return False
        try:
            if not self.alive():
                return False
            signal.pidfd_send_signal(pidfd, signum)
            return True
        except ProcessLookupError:
            return False
        finally:
            os.close(pidfd)


def _has_token(pid: int, needle: bytes, prefix: bool) -> bool:
    try:
        environ = (_PROC / str(pid) / "environ").read_bytes()
    except OSError:  # gone, or not ours to read
        return False
    start = environ.find(needle)
    while start != -1:
        if start == 0 or environ[start - 1] == 0:
            end = start + len(needle)
            if (
                end == len(environ)
                or environ[end] == 0
                or (prefix and environ[end : end + 1] == b".")
            ):
                return True
        start = environ.find(needle, start + 1)
    return False


def find(
    roots: Iterable[ProcessIdentity] = (),
    token: str | None = None,
    keep: Collection[int] = (),
    scoped: bool = False,
    cgroup: Path | None = None,
) -> list[ProcessIdentity]:
    """Live processes that are ``roots`` (still those very processes) or their descendants, or
    that carry ``token``, or that are in ``cgroup``.

    ``token`` matches ``TRAINER_SDK_JOB_TOKEN=<token>`` and, unless ``scoped``, also
    ``<token>.<scope>``. Processes in ``keep`` and their descendants, and the caller, are left out.
    """
    me = os.getpid()
    stats: dict[int, _Stat] = {}
    for entry in os.scandir(_PROC):
        if entry.name.isdigit():
            stat = _stat(int(entry.name))
            if stat is not None and stat.state not in ("Z", "X"):
                stats[int(entry.name)] = stat
    children: dict[int, list[int]] = {}
    for pid, stat in stats.items():
        children.setdefault(stat.ppid, []).append(pid)

    def subtree(pids: Iterable[int]) -> set[int]:
        found: set[int] = set()
        pending = [pid for pid in pids if pid in stats]
        while pending:
            pid = pending.pop()
            if pid not in found:
                found.add(pid)
                pending.extend(children.get(pid, ()))
        return found

    kept = subtree(keep) | {me}
    selected = subtree(
        root.pid
        for root in roots
        if root.pid in stats and stats[root.pid].start_time == root.start_time
    )
    if cgroup is not None:
        selected |= {pid for pid in cgroups.members(cgroup) if pid in stats}
    if token is not None:
        needle = f"{JOB_TOKEN_ENV}={token}".encode()
        selected |= {pid for pid in stats if _has_token(pid, needle, not scoped)}
    return [ProcessIdentity(pid, stats[pid].start_time) for pid in sorted(selected - kept)]


def terminate(
    processes: Callable[[], list[ProcessIdentity]],
    grace: float,
    kill_timeout: float = KILL_TIMEOUT_SECONDS,
) -> list[ProcessIdentity]:
    """SIGTERM what ``processes()`` returns (again for any that appear meanwhile), SIGKILL what is
    left after ``grace`` seconds; returns those still alive ``kill_timeout`` seconds later."""
    signalled: set[ProcessIdentity] = set()
    deadline = time.monotonic() + grace
    current = processes()
    while current and time.monotonic() < deadline:
        for process in current:
            if process not in signalled:
                process.send(signal.SIGTERM)
                signalled.add(process)
        time.sleep(POLL_SECONDS)
        current = processes()
    deadline = time.monotonic() + kill_timeout
    while current and time.monotonic() < deadline:
        for process in current:
            process.send(signal.SIGKILL)
        time.sleep(POLL_SECONDS)
        current = processes()
    return current


def reap_adopted() -> None:
    """Reap exited children of this process (orphans it adopted as a subreaper). Call it only
    once nobody waits for a child's exit status any more."""
    me = os.getpid()
    for entry in os.scandir(_PROC):
        if not entry.name.isdigit():
            continue
        stat = _stat(int(entry.name))
        if stat is not None and stat.ppid == me and stat.state == "Z":
            with contextlib.suppress(ChildProcessError):
                os.waitpid(int(entry.name), os.WNOHANG)


def become_subreaper() -> bool:
    """Make orphaned descendants of this process its children rather than init's (Linux)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False
