"""The one way tests wait for something that happens in another thread or process: poll a
predicate with a deadline (``wait_until``), never sleep a fixed time and hope.

Every test tree imports it (``pytest.ini`` puts ``tools/`` on the path)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

__all__ = ["DEADLINE_SECONDS", "wait_until"]

T = TypeVar("T")

DEADLINE_SECONDS = 120.0
"""How long a wait lasts by default: far beyond what anything takes on a loaded 2-core machine,
so that only something that never happens fails it."""


def wait_until(
    predicate: Callable[[], T],
    what: str,
    seconds: float = DEADLINE_SECONDS,
    interval: float = 0.05,
) -> T:
    """The first true value ``predicate`` returns, polled every ``interval`` seconds;
    AssertionError naming ``what`` when none came in ``seconds``."""
    deadline = time.monotonic() + seconds
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"waited {seconds:.0f} s for {what}")
        time.sleep(interval)
