"""How fast to go: token buckets (a pure one with an injected clock, and a bounded set of them
keyed by caller).

``TokenBucket.take`` never waits; it answers how long the caller would have to wait, so the API
client can sleep and the progress endpoint can answer 429 with ``Retry-After`` from one rule.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Hashable

__all__ = ["KeyedLimiter", "TokenBucket"]


class TokenBucket:
    """At most ``rate`` takes a second on average, bursts up to ``burst``; no limit at rate 0."""

    def __init__(
        self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._rate, self._burst, self._clock = rate, max(1, burst), clock
        self._tokens, self._stamp = float(self._burst), clock()

    def take(self) -> float:
        """Take a token and return 0.0, or return the seconds until one is free (taking nothing)."""
        if self._rate <= 0:
            return 0.0
        now = self._clock()
        self._tokens = min(self._burst, self._tokens + (now - self._stamp) * self._rate)
        self._stamp = now
        if self._tokens < 1:
            return (1 - self._tokens) / self._rate
        self._tokens -= 1
        return 0.0

    @property
    def full(self) -> bool:
        """Whether the bucket has refilled to its burst (it then holds no history worth keeping)."""
        elapsed = self._clock() - self._stamp
        return self._rate <= 0 or self._tokens + elapsed * self._rate >= self._burst


class KeyedLimiter:
    """One ``TokenBucket`` per key, at most ``capacity`` of them (full buckets are dropped first).

    Dropping a full bucket forgets nothing, since a new bucket starts full; when every bucket is
    in use the least recently used one goes, which can only make the limiter more lenient.
    """

    def __init__(
        self,
        rate: float,
        burst: int,
        capacity: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._rate, self._burst, self._capacity, self._clock = rate, burst, capacity, clock
        self._buckets: OrderedDict[Hashable, TokenBucket] = OrderedDict()

    def take(self, key: Hashable) -> float:
        """``TokenBucket.take`` on the bucket of ``key``."""
        bucket = self._buckets.get(key)
        if bucket is None:
            self._evict()
            bucket = self._buckets[key] = TokenBucket(self._rate, self._burst, self._clock)
        self._buckets.move_to_end(key)
        return bucket.take()

    def __len__(self) -> int:
        return len(self._buckets)

    def _evict(self) -> None:
        if len(self._buckets) < self._capacity:
            return
        for key in [key for key, bucket in self._buckets.items() if bucket.full]:
            del self._buckets[key]
        while len(self._buckets) >= self._capacity:
            self._buckets.popitem(last=False)
