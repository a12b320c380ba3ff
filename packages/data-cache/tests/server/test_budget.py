"""The memory budget and stream cap without a network."""

from __future__ import annotations

import threading

import pytest
from trainer_data_cache import InvalidArgumentError, MemoryBudgetExceededError
from trainer_data_cache.server.budget import MemoryBudget, StreamCap


def test_reservations_fit_until_the_limit_and_report_the_numbers() -> None:
    budget = MemoryBudget(100)
    budget.reserve(60, "a")
    with pytest.raises(
        MemoryBudgetExceededError,
        match="b: needs 50 bytes but the node holds 60 of its 100-byte memory budget \\(40 free\\)",
    ):
        budget.reserve(50, "b")
    budget.release(60)
    budget.reserve(100, "c")
    assert budget.usage().used == 100


def test_concurrent_reservations_never_overcommit() -> None:
    budget = MemoryBudget(1000)
    barrier = threading.Barrier(8)
    taken = []

    def worker() -> None:
        barrier.wait(timeout=30)
        for _ in range(50):
            try:
                budget.reserve(7, "x")
                taken.append(7)
            except MemoryBudgetExceededError:
                pass

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sum(taken) == budget.usage().used <= 1000
    assert budget.usage().used > 1000 - 7


def test_stream_cap_counts_open_streams() -> None:
    cap = StreamCap(2)
    assert cap.try_open() and cap.try_open() and not cap.try_open()
    cap.close()
    assert cap.active == 1 and cap.try_open()


@pytest.mark.parametrize(
    "make", [lambda: MemoryBudget(0), lambda: StreamCap(0)], ids=["budget", "cap"]
)
def test_limits_must_be_positive(make) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidArgumentError):
        make()
