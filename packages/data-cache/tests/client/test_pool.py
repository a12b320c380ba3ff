"""A dataset's client pool across a fork: the child starts with an empty pool of its own."""

from __future__ import annotations

import os
import signal
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from trainer_data_cache import ConnectOptions
from trainer_data_cache.client.pool import ClientPool

CHILD_TIMEOUT = 30.0
"""Seconds the forked child may take (it needs milliseconds; a deadlock never ends)."""


@dataclass(frozen=True)
class StalledConnect(ConnectOptions):
    """Connect options whose ``client`` stops half-way until ``release`` is set, as a thread
    opening a stream ahead does while it makes a new connection."""

    entered: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)

    def client(self, location: str) -> Any:
        self.entered.set()
        self.release.wait(CHILD_TIMEOUT)
        return object()


def exit_code(pid: int, timeout: float) -> int:
    """The exit code of child ``pid``; killed (and reported as -9) after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        finished, status = os.waitpid(pid, os.WNOHANG)
        if finished:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.01)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return -signal.SIGKILL


def test_a_fork_while_another_thread_makes_a_client_leaves_the_child_a_usable_pool() -> None:
    connect = StalledConnect()
    pool = ClientPool(connect)
    pool.acquire()
    maker = threading.Thread(target=pool.client, args=("grpc://127.0.0.1:1",))
    maker.start()
    try:
        assert connect.entered.wait(CHILD_TIMEOUT)  # the maker holds the pool's lock now
        pid = os.fork()
        if pid == 0:  # the child: the maker thread is not here, its lock must not be either
            code = 1
            try:
                pool.acquire()
                pool.release()
                code = 0 if pool.made == 0 else 2
            finally:
                os._exit(code)
    finally:
        connect.release.set()
        maker.join(CHILD_TIMEOUT)
    assert exit_code(pid, CHILD_TIMEOUT) == 0
    assert pool.made == 1  # the parent's pool kept what its thread made
    pool.release()
