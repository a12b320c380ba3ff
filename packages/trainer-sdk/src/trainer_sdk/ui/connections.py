"""How long and how many: the limits the UI server gives aiohttp and its answering threads.

aiohttp closes a connection that has not sent a whole request within ``header_seconds`` of
being accepted or answered (its keep-alive timeout, which also runs while the request line and
headers trickle in), and refuses over-long request lines and headers itself (400). Each request
is answered on one of ``max_connections`` threads while it reads the backend; more requests wait
their turn in the event loop, and idle or slow connections hold no thread at all. A streamed
answer (a log, its events) whose client stops reading for ``idle_seconds`` is dropped.

Not covered: the number of open sockets is bounded by the process's file limit, not here, and
there is no rate limit (a client sending whole requests as fast as they are answered is served).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["DEFAULT_LIMITS", "ConnectionLimits"]


@dataclass(frozen=True)
class ConnectionLimits:
    """Threads answering at once, and how long a client may take to ask and to read."""

    max_connections: int = 64
    header_seconds: float = 10.0
    idle_seconds: float = 30.0

    def __post_init__(self) -> None:
        if self.max_connections < 1:
            raise ValueError(f"max_connections: expected at least 1, got {self.max_connections}")
        for field in ("header_seconds", "idle_seconds"):
            if not getattr(self, field) > 0:
                raise ValueError(f"{field}: expected a positive number of seconds")


DEFAULT_LIMITS: Final = ConnectionLimits()
