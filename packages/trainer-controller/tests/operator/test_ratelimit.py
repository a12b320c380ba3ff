"""Token buckets: refill, bursts, the wait they answer, and a bounded set of them."""

from __future__ import annotations

import pytest
from trainer_controller.operator.ratelimit import KeyedLimiter, TokenBucket


def test_a_burst_passes_then_the_wait_is_answered_and_honoured(clock) -> None:  # type: ignore[no-untyped-def]
    bucket = TokenBucket(rate=2.0, burst=3, clock=clock)
    assert [bucket.take() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.take() == pytest.approx(0.5)
    clock.now += 0.25
    assert bucket.take() == pytest.approx(0.25)  # a refused take consumes nothing
    clock.now += 0.25
    assert bucket.take() == 0.0
    assert bucket.take() == pytest.approx(0.5)


def test_refill_stops_at_the_burst(clock) -> None:  # type: ignore[no-untyped-def]
    bucket = TokenBucket(rate=10.0, burst=2, clock=clock)
    bucket.take()
    assert not bucket.full
    clock.now += 3600
    assert bucket.full
    assert [bucket.take() for _ in range(3)][2] > 0


def test_rate_zero_is_no_limit(clock) -> None:  # type: ignore[no-untyped-def]
    bucket = TokenBucket(rate=0, burst=1, clock=clock)
    assert all(bucket.take() == 0.0 for _ in range(1000))


def test_keys_have_their_own_buckets(clock) -> None:  # type: ignore[no-untyped-def]
    limiter = KeyedLimiter(rate=1.0, burst=1, clock=clock)
    assert limiter.take(("ns", "a")) == 0.0
    assert limiter.take(("ns", "a")) > 0
    assert limiter.take(("ns", "b")) == 0.0


def test_capacity_drops_full_buckets_first_then_the_least_recent(clock) -> None:  # type: ignore[no-untyped-def]
    limiter = KeyedLimiter(rate=1.0, burst=1, capacity=2, clock=clock)
    limiter.take("a")
    clock.now += 10  # "a" refills: forgetting it changes nothing
    limiter.take("b")
    limiter.take("c")
    assert len(limiter) == 2
    assert limiter.take("b") > 0  # "b" was kept with its history
    limiter.take("d")  # both "b" and "c" are in use: the least recent ("c") goes
    assert len(limiter) == 2
    assert limiter.take("c") == 0.0
