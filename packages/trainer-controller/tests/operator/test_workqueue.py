"""The work queue: dedup, no concurrent processing of one key, delays and back-off."""

from __future__ import annotations

import asyncio

from trainer_controller.operator.workqueue import WorkQueue


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def run(coroutine):  # type: ignore[no-untyped-def]
    return asyncio.run(asyncio.wait_for(coroutine, timeout=10))


def test_adding_a_key_twice_queues_it_once() -> None:
    async def scenario() -> list[str]:
        queue: WorkQueue[str] = WorkQueue()
        for key in ("a", "b", "a"):
            queue.add(key)
        return [await queue.get(), await queue.get(), str(len(queue))]

    assert run(scenario()) == ["a", "b", "0"]


def test_key_added_while_processing_comes_back_after_done() -> None:
    async def scenario() -> tuple[int, str]:
        queue: WorkQueue[str] = WorkQueue()
        queue.add("a")
        key = await queue.get()
        queue.add("a")  # an event during the reconcile
        waiting = len(queue)
        queue.done(key)
        return waiting, await queue.get()

    assert run(scenario()) == (0, "a")


def test_delayed_key_is_not_ready_before_its_time() -> None:
    async def scenario() -> tuple[int, str]:
        clock = FakeClock()
        queue: WorkQueue[str] = WorkQueue(clock=clock)
        queue.add_after("a", 5.0)
        queue._promote()
        before = len(queue)
        clock.now = 5.0
        return before, await queue.get()

    assert run(scenario()) == (0, "a")


def test_back_off_doubles_per_failure_until_forgotten_and_is_capped() -> None:
    async def scenario() -> list[float]:
        queue: WorkQueue[str] = WorkQueue(base_delay=1.0, max_delay=5.0, clock=FakeClock())
        delays = [queue.retry("a") for _ in range(5)]
        queue.forget("a")
        return [*delays, queue.retry("a")]

    assert run(scenario()) == [1.0, 2.0, 4.0, 5.0, 5.0, 1.0]


def test_a_worker_cancelled_as_a_key_arrives_stops() -> None:
    async def scenario() -> tuple[bool, int]:
        queue: WorkQueue[str] = WorkQueue()
        queue.add_after("later", 60.0)  # so the worker waits with a timeout
        worker = asyncio.ensure_future(queue.get())
        await asyncio.sleep(0)  # the worker now waits for a key
        queue.add("a")  # wakes it, and in the same turn of the loop it is told to stop
        worker.cancel()
        await asyncio.wait((worker,))
        return worker.cancelled(), len(queue)

    assert run(scenario()) == (True, 1)
