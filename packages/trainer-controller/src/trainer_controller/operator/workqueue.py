"""A deduplicating work queue of TrainJob keys with delayed adds and per-key back-off.

The controller-runtime pattern: a key is queued at most once; a key being processed is never
handed to a second worker (a re-add while processing is replayed when it is done); failures are
retried with exponential back-off per key; ``requeue_after`` schedules a later pass.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections import deque
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["WorkQueue"]

K = TypeVar("K")


class WorkQueue(Generic[K]):
    """Keys to reconcile; ``get`` waits for one, ``done`` releases it."""

    def __init__(
        self,
        base_delay: float = 0.05,
        max_delay: float = 300.0,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self._base_delay, self._max_delay = base_delay, max_delay
        self._clock = clock or (lambda: asyncio.get_running_loop().time())
        self._ready: deque[K] = deque()
        self._queued: set[K] = set()
        self._processing: set[K] = set()
        self._dirty: set[K] = set()
        self._delayed: list[tuple[float, int, K]] = []
        self._counter = itertools.count()
        self._failures: dict[K, int] = {}
        self._wake = asyncio.Event()

    def __len__(self) -> int:
        return len(self._ready)

    def add(self, key: K) -> None:
        """Queue ``key`` now (once, however many times it is added)."""
        if key in self._processing:
            self._dirty.add(key)
        elif key not in self._queued:
            self._queued.add(key)
            self._ready.append(key)
            self._wake.set()

    def add_after(self, key: K, delay: float) -> None:
        """Queue ``key`` once ``delay`` seconds have passed."""
        if delay <= 0:
            self.add(key)
            return
        heapq.heappush(self._delayed, (self._clock() + delay, next(self._counter), key))
        self._wake.set()

    def retry(self, key: K) -> float:
        """Queue ``key`` again after its next back-off delay (doubling per failure); the delay."""
        failures = self._failures[key] = self._failures.get(key, 0) + 1
        delay = min(self._max_delay, self._base_delay * 2.0 ** (failures - 1))
        self.add_after(key, delay)
        return delay

    def forget(self, key: K) -> None:
        """Reset ``key``'s back-off after a success."""
        self._failures.pop(key, None)

    def _promote(self) -> float | None:
        """Move due delayed keys to ready; the seconds until the next one is due."""
        now = self._clock()
        while self._delayed and self._delayed[0][0] <= now:
            _, _, key = heapq.heappop(self._delayed)
            self.add(key)
        return self._delayed[0][0] - now if self._delayed else None

    async def get(self) -> K:
        """The next key to process; it is the caller's until ``done``."""
        while True:
            wait = self._promote()
            if self._ready:
                key = self._ready.popleft()
                self._queued.discard(key)
                self._processing.add(key)
                return key
            self._wake.clear()
            # Not wait_for: it can swallow a cancellation that comes with the wake-up (3.11).
            waiter = asyncio.ensure_future(self._wake.wait())
            try:
                await asyncio.wait((waiter,), timeout=wait)  # a timeout: a delayed key came due
            finally:
                waiter.cancel()

    def done(self, key: K) -> None:
        """Release ``key``; if it was added while processing, queue it again."""
        self._processing.discard(key)
        if key in self._dirty:
            self._dirty.discard(key)
            self.add(key)
