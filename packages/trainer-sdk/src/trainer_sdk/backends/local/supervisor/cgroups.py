"""A job's cgroup (v2), where the system lets this user create one: no process leaves it.

The supervisor moves itself into a fresh cgroup below its own before it starts anything, so every
process of the job is born inside, whatever it does to its session, process tree or environment.
The guardian stays outside and, once the supervisor is gone, ends whatever is left inside. Where
cgroup v2 is not mounted or not writable, ``create`` returns None and the job is contained by
process tree and token alone (``processes``).
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
from pathlib import Path

__all__ = ["create", "enter", "is_job_cgroup", "leave", "members", "remove"]

_PREFIX = "trainer-sdk-"


def _mount() -> Path | None:
    """Where the cgroup v2 hierarchy is mounted."""
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        fields, _, tail = line.partition(" - ")
        if tail.split(" ", 1)[0] == "cgroup2":
            return Path(fields.split()[4])
    return None


def _own() -> Path | None:
    """This process's cgroup v2 directory."""
    mount = _mount()
    if mount is None:
        return None
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        if line.startswith("0::"):
            return mount / line[3:].lstrip("/")
    return None


def create(job: str) -> Path | None:
    """A new, empty cgroup for ``job`` below this process's; None where none can be made."""
    own = _own()
    if own is None:
        return None
    path = own / f"{_PREFIX}{job}-{secrets.token_hex(4)}"
    try:
        path.mkdir()
    except OSError:
        return None
    return path


def enter(path: Path) -> bool:
    """Move this process into ``path``; whether it moved (its children are born there)."""
    try:
        (path / "cgroup.procs").write_text(str(os.getpid()))
    except OSError:
        return False
    return True


def leave(path: Path) -> bool:
    """Move this process from ``path`` back to the cgroup above it, so that ``path`` can go."""
    try:
        (path.parent / "cgroup.procs").write_text(str(os.getpid()))
    except OSError:
        return False
    return True


def members(path: Path) -> list[int]:
    """Every process in ``path`` and the cgroups below it."""
    pids: list[int] = []
    for directory, _, _ in os.walk(path):
        with contextlib.suppress(OSError):
            pids += [int(pid) for pid in Path(directory, "cgroup.procs").read_text().split()]
    return pids


def remove(path: Path) -> None:
    """Remove ``path`` (and the cgroups below it) once empty; left alone if a process remains."""
    for directory, _, _ in sorted(os.walk(path), key=lambda entry: -len(entry[0])):
        with contextlib.suppress(OSError):
            os.rmdir(directory)


def is_job_cgroup(path: Path, job: str) -> bool:
    """Whether ``path`` is a cgroup ``create(job)`` made (a recorded path is checked before use)."""
    mount = _mount()
    return (
        mount is not None
        and re.fullmatch(rf"{_PREFIX}{re.escape(job)}-[0-9a-f]{{8}}", path.name) is not None
        and path.resolve().is_relative_to(mount)
        and (path / "cgroup.procs").is_file()
    )
