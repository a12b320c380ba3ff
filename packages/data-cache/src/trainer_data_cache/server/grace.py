"""Stopping a serving process within a grace period, even with readers that stopped reading.

gRPC's shutdown waits for every call to return, and a stream whose reader holds the connection
open without reading never returns (its writes wait on flow control). So the servers are shut
down on a thread of their own; if that has not finished when the grace period ends, the process
exits at once, which resets the remaining connections (their readers resume elsewhere).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable
from typing import Final

__all__ = ["DEFAULT_GRACE_PERIOD", "FORCED_EXIT_STATUS", "close_within"]

DEFAULT_GRACE_PERIOD: Final = 10.0
"""Seconds a stopping server waits for its calls to end (Kubernetes allows 30 by default)."""

FORCED_EXIT_STATUS: Final = 143
"""Exit status when the grace period ran out (128 + SIGTERM, as a shell reports it)."""


def close_within(close: Callable[[], None], grace: float, report: Callable[[str], None]) -> None:
    """Run ``close``; if it has not returned after ``grace`` seconds, ``report`` why and exit
    the process with ``FORCED_EXIT_STATUS`` (an error ``close`` raises is raised here)."""
    failure: list[BaseException] = []

    def run() -> None:
        try:
            close()
        except BaseException as error:  # handed to the waiting thread
            failure.append(error)

    closer = threading.Thread(target=run, name="data-cache-shutdown", daemon=True)
    closer.start()
    closer.join(grace)
    if closer.is_alive():
        report(
            f"calls still open after the {grace:g} s grace period (readers that stopped "
            "reading); exiting without them"
        )
        logging.shutdown()
        sys.stdout.flush()
        os._exit(FORCED_EXIT_STATUS)
    if failure:
        raise failure[0]
