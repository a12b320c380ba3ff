"""Op recording: each ATen overload that reaches a gems kernel is logged once to a file."""

from __future__ import annotations

import threading
from pathlib import Path

__all__ = ["OpRecorder"]


class OpRecorder:
    """Appends an overload's name to ``path`` the first time it runs."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def record(self, overload: str) -> None:
        """Log ``overload`` unless it was logged before by this recorder."""
        if overload in self._seen:
            return
        with self._lock:
            if overload in self._seen:
                return
            self._seen.add(overload)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a") as stream:
                stream.write(f"{overload}\n")

    @property
    def seen(self) -> frozenset[str]:
        """The overloads recorded so far."""
        return frozenset(self._seen)
