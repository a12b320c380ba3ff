"""A node's memory budget and stream cap: thread-safe accounting kept apart from the server."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from trainer_data_cache.errors import InvalidArgumentError, MemoryBudgetExceededError

__all__ = ["MemoryBudget", "StreamCap"]


@dataclass(frozen=True)
class _Usage:
    limit: int
    used: int


class MemoryBudget:
    """Bytes of held partitions and of running queries' memory pools against a limit.

    It counts what the node was asked to hold (the Arrow buffers of each partition) and the pool
    each query was given (``take_up_to``: what is free, up to the node's per-query size); it
    does not see gRPC's own buffers or the interpreter's, so the process uses somewhat more
    than ``used``.
    """

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise InvalidArgumentError(f"memory_limit: expected bytes >= 1, got {limit}")
        self._limit = limit
        self._used = 0
        self._lock = threading.Lock()

    def reserve(self, nbytes: int, what: str) -> None:
        """Take ``nbytes`` for ``what``, or raise MemoryBudgetExceededError with the numbers."""
        with self._lock:
            if self._used + nbytes > self._limit:
                raise MemoryBudgetExceededError(
                    f"{what}: needs {nbytes} bytes but the node holds {self._used} of its "
                    f"{self._limit}-byte memory budget ({self._limit - self._used} free)"
                )
            self._used += nbytes

    def take_up_to(self, nbytes: int) -> int:
        """Take ``nbytes``, or what is free when that is less; returns what was taken."""
        with self._lock:
            taken = max(0, min(nbytes, self._limit - self._used))
            self._used += taken
            return taken

    def release(self, nbytes: int) -> None:
        """Give back ``nbytes`` taken earlier."""
        with self._lock:
            self._used = max(0, self._used - nbytes)

    def usage(self) -> _Usage:
        """A snapshot of limit and use."""
        with self._lock:
            return _Usage(self._limit, self._used)


class StreamCap:
    """At most ``limit`` streams at once; ``try_open`` says whether one more may start."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise InvalidArgumentError(f"max_streams: expected at least 1, got {limit}")
        self._limit = limit
        self._active = 0
        self._lock = threading.Lock()

    @property
    def limit(self) -> int:
        return self._limit

    def try_open(self) -> bool:
        with self._lock:
            if self._active >= self._limit:
                return False
            self._active += 1
            return True

    def close(self) -> None:
        with self._lock:
            self._active -= 1

    @property
    def active(self) -> int:
        with self._lock:
            return self._active
