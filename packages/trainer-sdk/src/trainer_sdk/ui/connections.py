"""The UI server's connections: a cap on how many it holds, and a deadline for each one that has
not yet sent a whole request.

A connection is *waiting* from the moment it is accepted (or has been answered) until its request
line and headers have arrived, and *busy* while it is being answered. A waiting connection that
passes its deadline is shut down by one watchdog thread, so a client that sends a request line
and then nothing (or a byte every few seconds) holds a thread for ``header_seconds`` at most.
When the cap is reached, a new connection takes the place of the waiting one that has waited
longest; only when every held connection is busy is the new one refused with a 503.

Not covered: a client that sends whole requests as fast as the server answers them is served
(there is no rate limit), and the cap is per server, not per client address.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from dataclasses import dataclass
from typing import Final

__all__ = ["DEFAULT_LIMITS", "ConnectionLimits", "Connections"]

_WATCH_SECONDS = 0.1


@dataclass(frozen=True)
class ConnectionLimits:
    """How many connections the server holds, and how long each may take to send a request."""

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


class Connections:
    """The connections a server holds; thread-safe."""

    def __init__(self, limits: ConnectionLimits) -> None:
        self.limits = limits
        self._lock = threading.Lock()
        self._deadlines: dict[socket.socket, float | None] = {}  # None: busy
        self._stopped = threading.Event()
        self._watchdog = threading.Thread(target=self._watch, name="ui-connections", daemon=True)
        self._watchdog.start()

    def __len__(self) -> int:
        with self._lock:
            return len(self._deadlines)

    def admit(self, connection: socket.socket) -> bool:
        """Hold ``connection`` (waiting for its first request), making room if need be; False
        when every held connection is busy."""
        with self._lock:
            if len(self._deadlines) >= self.limits.max_connections:
                waiting = [
                    (deadline, held)
                    for held, deadline in self._deadlines.items()
                    if deadline is not None
                ]
                if not waiting:
                    return False
                _, oldest = min(waiting, key=lambda item: item[0])
                self._drop(oldest)
            self._deadlines[connection] = time.monotonic() + self.limits.header_seconds
        return True

    def waiting(self, connection: socket.socket) -> None:
        """``connection`` has been answered and may send another request within idle_seconds."""
        with self._lock:
            if connection in self._deadlines:
                self._deadlines[connection] = time.monotonic() + self.limits.idle_seconds

    def busy(self, connection: socket.socket) -> None:
        """``connection``'s request has arrived: no deadline while it is answered."""
        with self._lock:
            if connection in self._deadlines:
                self._deadlines[connection] = None

    def release(self, connection: socket.socket) -> None:
        """``connection`` is closed."""
        with self._lock:
            self._deadlines.pop(connection, None)

    def close(self) -> None:
        """Stop the watchdog."""
        self._stopped.set()
        self._watchdog.join(timeout=5)

    def _drop(self, connection: socket.socket) -> None:
        """Shut ``connection`` down (its thread then reads the end and returns); lock held."""
        self._deadlines.pop(connection, None)
        with contextlib.suppress(OSError):  # already closed by the other side
            connection.shutdown(socket.SHUT_RDWR)

    def _watch(self) -> None:
        while not self._stopped.wait(_WATCH_SECONDS):
            now = time.monotonic()
            with self._lock:
                expired = [
                    held
                    for held, deadline in self._deadlines.items()
                    if deadline is not None and deadline < now
                ]
                for connection in expired:
                    self._drop(connection)
