"""Offload: calls run in its own threads, at most workers + backlog at once, Busy beyond."""

from __future__ import annotations

import asyncio
import threading

import pytest
from trainer_controller.operator.offload import Busy, Offload


def test_calls_run_in_worker_threads_off_the_event_loop() -> None:
    async def main() -> str:
        offload = Offload("test-pool")
        try:
            return await offload.run(lambda: threading.current_thread().name)
        finally:
            offload.close()

    assert asyncio.run(main()).startswith("test-pool")


def test_beyond_workers_and_backlog_calls_are_refused_at_once() -> None:
    release = threading.Event()

    def blocking() -> str:
        assert release.wait(timeout=30), "never released"
        return "done"

    async def main() -> list[str]:
        offload = Offload("bounded", workers=2, backlog=1)
        try:
            running = [asyncio.ensure_future(offload.run(blocking)) for _ in range(3)]
            await asyncio.sleep(0)  # the three calls are admitted (two run, one waits)
            with pytest.raises(Busy):
                await offload.run(blocking)
            release.set()
            return list(await asyncio.gather(*running))
        finally:
            release.set()
            offload.close()

    assert asyncio.run(main()) == ["done"] * 3


def test_bad_sizes_are_refused() -> None:
    with pytest.raises(ValueError, match="workers must be >= 1"):
        Offload("x", workers=0)
