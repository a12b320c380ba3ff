"""The Flight clients a dataset keeps open between its iterations: one per location (head or
node, so one gRPC connection each), in the process that made them, never across a fork.

Reusing them saves each iteration the connections to the head and the nodes (a few ms apiece,
against a pass of a few hundred). Fork safety is kept: while no iteration holds the pool, its
clients are idle, and just before this process forks ``forks`` closes every idle pool (they are
made again on the next use), so a worker forked between iterations starts as before; a fork
while an iteration runs is refused in the child as before. A child never uses or closes a pool
inherited from its parent: every pool starts empty in a forked child, with a new lock (the
parent's may have been held by a thread that does not exist in the child).
"""

from __future__ import annotations

import os
import threading
import weakref
from typing import Final

import pyarrow.flight as flight

from trainer_data_cache import forks
from trainer_data_cache.connection import ConnectOptions

__all__ = ["ClientPool"]

_pools: Final[weakref.WeakSet[ClientPool]] = weakref.WeakSet()


class ClientPool:
    """Flight clients by location, made on first use and kept until ``close``.

    ``acquire``/``release`` bracket each iteration; only a pool no iteration holds may be
    closed by a fork.
    """

    def __init__(self, connect: ConnectOptions) -> None:
        self._connect = connect
        self._start_empty()
        _pools.add(self)

    def _start_empty(self) -> None:
        self._lock = threading.Lock()
        self._clients: dict[str, flight.FlightClient] = {}
        self._users = 0
        self.made = 0
        """How many clients this pool made in this process (tests count reuse with it)."""

    def acquire(self) -> None:
        """An iteration starts using the pool (its clients are no longer idle)."""
        with self._lock:
            self._users += 1
            forks.busy(self)

    def release(self) -> None:
        """An iteration ended; with none left, the clients are idle (closable by a fork)."""
        with self._lock:
            self._users = max(0, self._users - 1)
            if self._users == 0:
                forks.idle(self)

    def client(self, location: str) -> flight.FlightClient:
        """The client for ``location``, made once per process."""
        with self._lock:
            if location not in self._clients:
                self._clients[location] = self._connect.client(location)
                self.made += 1
            return self._clients[location]

    def drop(self, location: str) -> None:
        """Close the client of ``location`` (a broken one): the next use makes a new one."""
        with self._lock:
            client = self._clients.pop(location, None)
        if client is not None:
            forks.close(client)

    def close(self) -> None:
        """Close every client (also called by ``forks`` before a fork, when idle)."""
        with self._lock:
            clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            forks.close(client)


def _start_every_pool_empty() -> None:
    """In a forked child: the inherited clients belong to the parent, and a lock may be held by
    one of its threads (opening a stream ahead) that the child does not have."""
    for pool in list(_pools):
        pool._start_empty()


os.register_at_fork(after_in_child=_start_every_pool_empty)
