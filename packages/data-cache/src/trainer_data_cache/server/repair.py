"""Placement repair's pure core: which partitions nodes should hold but do not, and when to ask a
node that failed again."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from trainer_data_cache.errors import InvalidArgumentError

__all__ = ["MAX_BACKOFF_FACTOR", "NodeHealth", "Placed", "Repair", "holdings", "plan_repairs"]

MAX_BACKOFF_FACTOR: Final = 8
"""A node that keeps failing is asked again after at most this many repair intervals."""

Holdings = Mapping[tuple[str, int, int], int]
"""What a node holds: ``(dataset, partition, generation)`` to bytes."""


@dataclass(frozen=True)
class Placed:
    """One partition of a dataset generation, its rows, and the nodes that should hold it."""

    dataset: str
    generation: int
    partition: int
    rows: int
    locations: tuple[str, ...]


@dataclass(frozen=True)
class Repair:
    """Partition ``partition`` of ``dataset`` (generation ``generation``, ``rows`` rows) is
    missing on ``target``; ``sources`` hold it (``nbytes`` bytes), none when it is lost."""

    dataset: str
    generation: int
    partition: int
    rows: int
    target: str
    sources: tuple[str, ...]
    nbytes: int

    def describe(self) -> dict[str, object]:
        """A JSON-ready summary for the head's status."""
        return {
            "dataset": self.dataset,
            "generation": self.generation,
            "partition": self.partition,
            "location": self.target,
            "sources": list(self.sources),
        }


def holdings(status: Mapping[str, Any]) -> dict[tuple[str, int, int], int]:
    """The partitions a node's ``status`` document lists, keyed as ``Holdings``."""
    return {
        (part["dataset"], part["partition"], part["generation"]): part["bytes"]
        for part in status["partitions"]
    }


def plan_repairs(placed: Iterable[Placed], held: Mapping[str, Holdings]) -> list[Repair]:
    """Every partition a node in ``held`` (the nodes that answered) should hold and does not.

    Nodes absent from ``held`` are neither targets nor sources: nothing is known of them.
    """
    repairs = []
    for part in placed:
        key = (part.dataset, part.partition, part.generation)
        sources = tuple(location for location in part.locations if key in held.get(location, {}))
        for target in part.locations:
            if target in held and key not in held[target]:
                nbytes = held[sources[0]][key] if sources else 0
                repairs.append(
                    Repair(
                        part.dataset,
                        part.generation,
                        part.partition,
                        part.rows,
                        target,
                        sources,
                        nbytes,
                    )
                )
    return repairs


@dataclass
class _Health:
    failures: int = 0
    retry_at: float = 0.0
    error: str | None = None
    repaired: int = 0


class NodeHealth:
    """Per node: consecutive failures, when to ask it again (back-off doubling from
    ``interval`` up to ``MAX_BACKOFF_FACTOR`` intervals), its last error and how many partitions
    were copied back onto it. Thread-safe."""

    def __init__(
        self,
        locations: Sequence[str],
        interval: float,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if interval <= 0:
            raise InvalidArgumentError(f"repair_interval: expected seconds > 0, got {interval}")
        self._interval = interval
        self._clock = clock
        self._nodes = {location: _Health() for location in locations}
        self._lock = threading.Lock()

    def due(self, location: str) -> bool:
        """Whether ``location`` may be asked now (it is not backing off)."""
        with self._lock:
            return self._clock() >= self._nodes[location].retry_at

    def failed(self, location: str, error: str) -> None:
        """Record a failure and back off: ``interval * 2**(failures - 1)``, capped."""
        with self._lock:
            health = self._nodes[location]
            health.failures += 1
            health.error = error
            delay = self._interval * min(2 ** (health.failures - 1), MAX_BACKOFF_FACTOR)
            health.retry_at = self._clock() + delay

    def succeeded(self, location: str, repaired: int = 0) -> None:
        """Record a round in which ``location`` answered and got ``repaired`` partitions."""
        with self._lock:
            health = self._nodes[location]
            health.failures, health.retry_at, health.error = 0, 0.0, None
            health.repaired += repaired

    def repaired(self) -> int:
        """Partitions copied back onto any node so far."""
        with self._lock:
            return sum(health.repaired for health in self._nodes.values())

    def snapshot(self) -> dict[str, dict[str, object]]:
        """Per location: failures, seconds until the next try, last error, partitions repaired."""
        with self._lock:
            now = self._clock()
            return {
                location: {
                    "failures": health.failures,
                    "retry_in": round(max(0.0, health.retry_at - now), 3),
                    "error": health.error,
                    "repaired": health.repaired,
                }
                for location, health in self._nodes.items()
            }
