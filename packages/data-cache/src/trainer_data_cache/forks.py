"""Fork safety: which Flight connections this process holds, and whether it inherited gRPC state.

gRPC (under pyarrow.flight) runs threads and holds locks while any client or server of it is
alive in a process, and for a few milliseconds more: closing the last client only starts its
shutdown, on gRPC's own threads. A child forked meanwhile inherits that state without the
threads: a Flight call made there never completes, and even dropping an inherited client hangs.
A child forked once gRPC has shut down (no gRPC thread left) may use Flight like a new process.

So every client and server this package makes is recorded here until it is closed (a server:
collected), and just before this process forks (``os.register_at_fork``):

- idle pools of clients (kept between a dataset's iterations, ``idle``) are closed first;
- if one is still open, the child is marked unsafe;
- else, if this process ever opened one, the fork waits (up to ``SHUTDOWN_TIMEOUT``) until no
  gRPC thread is left, and marks the child unsafe if some are still running then.

In an unsafe child, making a client or a server raises ``UnsafeForkError`` at once, naming what
was open and the remedy, instead of hanging; the objects it inherited are kept alive so that their
destructors never run in it. Flight objects made outside this package are not recorded; their
gRPC threads are seen only after this package has opened a connection itself.
"""

from __future__ import annotations

import os
import time
import weakref
from pathlib import Path
from typing import Any, Final, Protocol

from trainer_data_cache.errors import UnsafeForkError

__all__ = [
    "SHUTDOWN_TIMEOUT",
    "Closable",
    "busy",
    "check",
    "close",
    "grpc_threads",
    "held",
    "idle",
    "opened",
]

SHUTDOWN_TIMEOUT: Final = 10.0
"""Seconds a fork waits for gRPC to finish shutting down after the last connection closed
(it takes milliseconds; the bound only matters when something else keeps gRPC running)."""

_GRPC_THREAD_PREFIXES: Final = (
    "grpc",  # grpc_global_timer, grpc_shutdown, grpcpp_sync_server (names are cut to 15 bytes)
    "event_engine",
    "lifeguard",
    "default-executo",
    "resolver-execu",
    "global-executo",
)
_TASKS: Final = Path("/proc/self/task")
_POLL_INTERVAL: Final = 0.002


class Closable(Protocol):
    """Something holding clients that may be closed before a fork (and reopened later)."""

    def close(self) -> None: ...


_open: Final[weakref.WeakKeyDictionary[Any, str]] = weakref.WeakKeyDictionary()
_state: Final[dict[str, Any]] = {"used": False, "fork_problem": None}
_idle: Final[weakref.WeakSet[Closable]] = weakref.WeakSet()
_inherited: Final[list[Any]] = []  # strong references: inherited objects must never be destroyed
_unsafe_because: Final[list[str]] = []  # why this process must not use gRPC, per unsafe fork


def opened(resource: Any, description: str) -> None:
    """Record a Flight client or server (``description``: what it is, where) as open here."""
    _open[resource] = description
    _state["used"] = True


def close(client: Any) -> None:
    """Close a client recorded by ``opened``; one inherited through a fork is left alone."""
    if _open.pop(client, None) is not None:
        client.close()


def idle(pool: Closable) -> None:
    """``pool``'s clients are not in use: close them (``pool.close()``) before a fork."""
    _idle.add(pool)


def busy(pool: Closable) -> None:
    """``pool``'s clients are in use again: a fork now leaves them open (and the child unsafe)."""
    _idle.discard(pool)


def held() -> list[str]:
    """What this process holds open now, one description each."""
    return sorted(_open.values())


def grpc_threads() -> list[str] | None:
    """The names of this process's gRPC threads, or None where threads cannot be listed."""
    try:
        tasks = list(_TASKS.iterdir())
    except OSError:
        return None
    names = []
    for task in tasks:
        try:
            name = (task / "comm").read_text().strip()
        except OSError:  # the thread ended meanwhile
            continue
        if name.startswith(_GRPC_THREAD_PREFIXES):
            names.append(name)
    return sorted(names)


def check() -> None:
    """Raise ``UnsafeForkError`` if this process was forked while gRPC was in use."""
    if _unsafe_because:
        raise UnsafeForkError(
            f"this process (pid {os.getpid()}) was forked while {'; '.join(_unsafe_because)}; "
            "gRPC cannot be used after such a fork (it would hang). Start DataLoader workers "
            'with multiprocessing_context="forkserver" (or "spawn"), or finish or close every '
            "iteration over the cache and stop in-process cache servers before the workers "
            "start."
        )


def _fork_problem() -> str | None:
    """Why a child forked now could not use gRPC, or None if it could."""
    if _open:
        return _holding(os.getpid())
    if not _state["used"]:
        return None
    deadline = time.monotonic() + SHUTDOWN_TIMEOUT
    while True:
        threads = grpc_threads()
        if threads == []:
            return None
        if threads is None:
            return f"its parent (pid {os.getpid()}) had used gRPC and its threads cannot be listed"
        if time.monotonic() >= deadline:
            return (
                f"its parent (pid {os.getpid()}) still ran gRPC threads ({', '.join(threads)}) "
                f"{SHUTDOWN_TIMEOUT:g} s after its last Flight connection closed"
            )
        time.sleep(_POLL_INTERVAL)


def _holding(parent: int) -> str:
    descriptions = held()
    return (
        f"its parent (pid {parent}) held {len(descriptions)} Flight connection(s) open "
        f"({', '.join(descriptions)})"
    )


def _before_fork() -> None:
    for pool in list(_idle):
        pool.close()
    _state["fork_problem"] = _fork_problem()


def _after_fork_in_parent() -> None:
    _state["fork_problem"] = None


def _after_fork_in_child() -> None:
    problem, _state["fork_problem"] = _state["fork_problem"], None
    if problem is None and _open:  # opened by another thread after ``_before_fork``
        problem = _holding(os.getppid())
    if problem is not None:
        _unsafe_because.append(problem)
    _inherited.extend(_open.keys())
    _open.clear()
    _idle.clear()


os.register_at_fork(
    before=_before_fork,
    after_in_parent=_after_fork_in_parent,
    after_in_child=_after_fork_in_child,
)
