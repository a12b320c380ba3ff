"""CPU-bound request work off the event loop, so probes, watches and reconciles stay responsive.

Decoding and validating a multi-megabyte AdmissionReview takes the CPU for seconds; on the
event loop, a few of them at once would delay ``/healthz`` past its probe timeout and every
reconcile behind them. An ``Offload`` runs such calls in a thread pool of its own: at most
``workers`` run at once, at most ``backlog`` more wait, and beyond that ``Busy`` is raised at
once so that the endpoint answers 429 instead of queueing without bound. The default is one
worker: validation is pure Python, so more threads would not validate faster (one GIL) but would
take more turns from the loop, which gets its turn every switch interval (5 ms) and is slowed,
not stalled. It does not bound the memory of a request: the endpoints' body limits do.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

__all__ = ["Busy", "Offload"]

P = ParamSpec("P")
T = TypeVar("T")


class Busy(Exception):
    """Every worker is busy and the backlog is full: come back later."""


class Offload:
    """Calls run in ``workers`` threads of a pool named ``name``, with ``backlog`` waiting."""

    def __init__(self, name: str, workers: int = 1, backlog: int = 8) -> None:
        if workers < 1 or backlog < 0:
            raise ValueError(f"workers must be >= 1 and backlog >= 0, got {workers}, {backlog}")
        self._executor = ThreadPoolExecutor(workers, thread_name_prefix=name)
        self._capacity = workers + backlog
        self._admitted = 0  # touched only on the event loop

    async def run(self, function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """``function(*args, **kwargs)`` in a worker thread; ``Busy`` when the pool is full."""
        if self._admitted >= self._capacity:
            raise Busy(f"{self._capacity} requests are already being processed; retry shortly")
        self._admitted += 1
        try:
            call = functools.partial(function, *args, **kwargs)
            return await asyncio.get_running_loop().run_in_executor(self._executor, call)
        finally:
            self._admitted -= 1

    def close(self) -> None:
        """Stop taking work; calls not yet started are cancelled, running ones finish."""
        self._executor.shutdown(wait=False, cancel_futures=True)
