"""Tie mpirun, its ranks and whatever they start to the life of ``mpi-launch`` (Linux).

- mpirun is started with a parent-death signal (``PR_SET_PDEATHSIG``, SIGTERM): when
  ``mpi-launch`` dies, even by SIGKILL, mpirun is told to stop and stops its ranks on every host.
- ``mpi-launch`` is a child subreaper (``PR_SET_CHILD_SUBREAPER``): processes that ranks started
  and left behind (an aborted job's rank children, ``setsid`` grandchildren) become its children
  instead of init's, and ``end_leftovers`` ends them once mpirun has exited.

Elsewhere (no ``prctl``) both are unavailable: ``supported()`` says so and ``mpi-launch`` warns
once that processes may outlive it.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import signal
import sys
import time
from collections.abc import Callable
from typing import Final

from mpi_runtime._process_trees import descendants

__all__ = ["become_subreaper", "die_with_parent", "end_leftovers", "supported"]

_PR_SET_PDEATHSIG: Final = 1
_PR_SET_CHILD_SUBREAPER: Final = 36


@functools.cache
def _prctl_function() -> Callable[..., int] | None:
    """libc's ``prctl``, resolved before any fork (loading libraries in a forked child of a
    threaded process can deadlock); None where there is none.

    Looked up among the symbols already loaded (libc is, by Python itself):
    ``ctypes.util.find_library`` would run ``ldconfig`` in a subprocess at every start.
    """
    if not sys.platform.startswith("linux"):
        return None
    function: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    return function


def supported() -> bool:
    """Whether this system can tie processes to the launcher's life (Linux)."""
    return sys.platform.startswith("linux")


def become_subreaper() -> bool:
    """Make this process adopt its orphaned descendants; False where it cannot."""
    prctl = _prctl_function()
    return prctl is not None and prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0


def die_with_parent(signum: int = signal.SIGTERM) -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes the child receive ``signum`` when this process dies (also if
    it already has by the time the child runs it); None where that is not possible."""
    prctl = _prctl_function()
    if prctl is None:
        return None
    parent = os.getpid()

    def arm() -> None:
        prctl(_PR_SET_PDEATHSIG, signum, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the signal was armed
            os.kill(os.getpid(), signum)

    return arm


def _reap() -> None:
    """Collect exited children (adopted orphans included), without blocking."""
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0] != 0:
            pass


def end_leftovers(grace_s: float = 5.0) -> list[int]:
    """SIGTERM every remaining descendant, SIGKILL those alive after ``grace_s``; their pids."""
    try:  # a subreaper without children has no descendants: no need to read /proc
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return []
    left = descendants(os.getpid())
    if not left:
        return left
    for pid in left:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        _reap()
        if not descendants(os.getpid()):
            return left
        time.sleep(0.05)  # polling /proc, with a deadline, for them to exit
    for pid in descendants(os.getpid()):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):  # not ours to reap: its parent will
            os.waitpid(pid, 0)
    return left
