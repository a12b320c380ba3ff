"""Reading one ticket to its end despite broken streams: resume, back off, fail over, give up."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Final, NoReturn

import pyarrow as pa
import pyarrow.flight as flight
import tenacity

from trainer_data_cache.client.pool import ClientPool
from trainer_data_cache.connection import ConnectOptions
from trainer_data_cache.errors import (
    DatasetNotFoundError,
    InvalidArgumentError,
    StreamFailedError,
    from_flight_error,
    retry_after,
)
from trainer_data_cache.tickets import Ticket

__all__ = ["RetryPolicy", "StreamReader"]


@dataclass(frozen=True)
class RetryPolicy:
    """How hard to try: ``attempts_per_location`` tries on a location (back-off doubling from
    ``backoff`` up to ``max_backoff`` s) before the next one; give up after ``timeout`` s."""

    attempts_per_location: int = 3
    backoff: float = 0.05
    max_backoff: float = 2.0
    timeout: float = 60.0

    def __post_init__(self) -> None:
        if self.attempts_per_location < 1:
            raise InvalidArgumentError("retry.attempts_per_location: expected at least 1")
        if self.backoff < 0 or self.max_backoff < self.backoff:
            raise InvalidArgumentError("retry: expected 0 <= backoff <= max_backoff")
        if self.timeout <= 0:
            raise InvalidArgumentError(f"retry.timeout: expected seconds > 0, got {self.timeout}")


class StreamReader:
    """Reads tickets from node locations, one Flight client per location, created on first use
    (so, in a DataLoader worker, after the fork) in ``pool``: the caller's, kept open after
    ``close`` for its next reader, or else one of its own, closed with it.

    ``open_ahead`` opens a ticket's stream on a background thread while the caller still reads
    another one, so that the next partition (or the next shuffled block) is connected and its
    first batch on the way when the current one ends, instead of costing a round trip then.
    """

    def __init__(
        self,
        connect: ConnectOptions,
        retry: RetryPolicy,
        *,
        pool: ClientPool | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._connect = connect
        self._retry = retry
        self._clock = clock
        self._sleep = sleep
        self._owns_pool = pool is None
        self._pool = ClientPool(connect) if pool is None else pool
        self._pool.acquire()
        self._opener: ThreadPoolExecutor | None = None
        self._opening: dict[bytes, Future[flight.FlightStreamReader]] = {}
        self.retries = 0

    def open_ahead(self, ticket: Ticket, locations: Sequence[str]) -> None:
        """Start opening ``ticket``'s stream on its first location in the background; the next
        ``read`` of that ticket starts from it (a failure to open counts as its first attempt,
        retried and failed over like any other)."""
        key = ticket.to_bytes()
        if not locations or key in self._opening:
            return
        if self._opener is None:
            self._opener = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cache-open")
        self._opening[key] = self._opener.submit(self._open, locations[0], ticket)

    def flight_info(self, location: str, descriptor: flight.FlightDescriptor) -> flight.FlightInfo:
        """``get_flight_info`` at the head, retried while the head is unreachable or still
        loading (Unavailable), up to the overall timeout; a refusal is raised at once."""
        deadline = self._clock() + self._retry.timeout
        what = f"could not ask {location} where the rows are"

        def ask() -> flight.FlightInfo:
            try:
                return self._pool.client(location).get_flight_info(
                    descriptor, self._connect.call_options(self._retry.timeout)
                )
            except (flight.FlightError, OSError) as error:
                _raise_refusal(error)
                raise

        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception_type((flight.FlightError, OSError))
            & tenacity.retry_if_not_exception_type(_DENIED),
            wait=lambda state: self._backoff(_failure(state), state.attempt_number),
            stop=lambda state: self._clock() + state.upcoming_sleep > deadline,
            retry_error_callback=lambda state: self._give_up(_failure(state), what),
            sleep=self._sleep,
        )
        return retrying(ask)

    def read(self, ticket: Ticket, locations: Sequence[str]) -> Iterator[pa.RecordBatch]:
        """Every row of ``ticket`` exactly once, in order.

        A broken stream is reopened from the first row not yet yielded, on the same location
        with back-off, then on the next location; a location that does not hold the partition is
        skipped; any other refusal (bad ticket, bad filter) is raised at once; after the overall
        timeout StreamFailedError says what failed.
        """
        if not locations:
            raise InvalidArgumentError(f"ticket for {ticket.dataset!r} has no locations")
        deadline = self._clock() + self._retry.timeout
        position, index, failures = ticket.start, 0, 0
        missing: set[str] = set()  # locations that answered they do not hold the partition
        opened = self._opening.pop(ticket.to_bytes(), None)  # on locations[0], from the start
        while position < ticket.stop:
            location = locations[index]
            try:
                stream, opened = self._stream(location, ticket.resumed(position), opened), None
                for batch in stream:
                    position += batch.num_rows
                    failures = 0
                    yield batch
                if position < ticket.stop:
                    raise _Incomplete(f"stream ended at row {position} of {ticket.stop}")
                return
            except (flight.FlightError, OSError, _Incomplete) as error:
                if isinstance(_typed(error), DatasetNotFoundError):
                    # A restarted node holds nothing; its replica may still hold the rows.
                    missing.add(location)
                    if missing.issuperset(locations):
                        _raise_refusal(error)
                    index, failures = (index + 1) % len(locations), 0
                    continue
                _raise_refusal(error)
                failures += 1
                self._wait(
                    error,
                    failures,
                    deadline,
                    f"dataset {ticket.dataset!r}: could not read rows {position}..{ticket.stop} "
                    f"from {list(locations)}",
                )
                if failures >= self._retry.attempts_per_location and len(locations) > 1:
                    index, failures = (index + 1) % len(locations), 0
                    self._pool.drop(location)

    def _wait(self, error: Exception, failures: int, deadline: float, what: str) -> None:
        """Sleep before the next attempt, or give up if that would pass the deadline."""
        delay = self._backoff(error, failures)
        if self._clock() + delay > deadline:
            self._give_up(error, what)
        self._sleep(delay)

    def _backoff(self, error: BaseException, failures: int) -> float:
        """The wait before the next attempt: the server's retry hint, else doubling back-off."""
        self.retries += 1
        hint = retry_after(error) if isinstance(error, flight.FlightError) else None
        if hint is None:
            return min(self._retry.max_backoff, self._retry.backoff * 2.0 ** (failures - 1))
        return hint

    def _give_up(self, error: BaseException, what: str) -> NoReturn:
        raise StreamFailedError(
            f"{what} within {self._retry.timeout:g} s; last error: {error}"
        ) from error

    def _open(self, location: str, ticket: Ticket) -> flight.FlightStreamReader:
        return self._pool.client(location).do_get(
            flight.Ticket(ticket.to_bytes()), self._connect.call_options()
        )

    def _stream(
        self,
        location: str,
        ticket: Ticket,
        opened: Future[flight.FlightStreamReader] | None = None,
    ) -> Iterator[pa.RecordBatch]:
        reader = opened.result() if opened is not None else self._open(location, ticket)
        while True:
            try:
                chunk = reader.read_chunk()
            except StopIteration:
                return
            yield chunk.data

    def close(self) -> None:
        """Cancel the streams opened ahead and not read, end the opening thread, and give the
        clients back to the caller's pool (or close them, when the pool is this reader's)."""
        if self._opener is not None:
            self._opener.shutdown(wait=True)
            self._opener = None
        for future in self._opening.values():
            if future.exception() is None:
                future.result().cancel()
        self._opening.clear()
        self._pool.release()
        if self._owns_pool:
            self._pool.close()


_DENIED: Final = (flight.FlightUnauthenticatedError, flight.FlightUnauthorizedError)
"""Failures that no retry mends."""


class _Incomplete(Exception):
    """A stream ended before its last row."""


def _typed(error: Exception) -> Exception | None:
    return from_flight_error(error) if isinstance(error, flight.FlightError) else None


def _failure(state: tenacity.RetryCallState) -> BaseException:
    """The exception of the attempt ``state`` retries after."""
    assert state.outcome is not None  # tenacity asks to wait or stop only after an attempt
    return state.outcome.exception() or RuntimeError("attempt failed without an exception")


def _raise_refusal(error: Exception) -> None:
    """Raise ``error`` (as its typed form) unless it is a failure worth retrying."""
    typed = _typed(error)
    if typed is not None:
        raise typed from error
    if isinstance(error, _DENIED):
        raise error
