"""Errors raised by the cache, and how they cross the Flight wire.

```
CacheError
 +-- InvalidArgumentError       an argument or option is out of range or of the wrong kind
 +-- SourceError                a source path is missing, unreadable or of an unknown format
 +-- SchemaMismatchError        files of one source disagree on their schema
 +-- UnknownColumnError         a projection names a column the data does not have
 +-- InvalidFilterError         a filter is malformed or not a boolean expression
 +-- DatasetNotFoundError       no dataset of that name is loaded
 +-- StaleTicketError           the dataset was reloaded after the ticket was issued
 +-- MemoryBudgetExceededError  a load would exceed a node's memory budget
 +-- NullValueError             a column holds nulls and no fill value was given
 +-- InvalidStateError          a state dict does not match the dataset it is loaded into
 +-- StreamFailedError          a stream could not be completed before the overall timeout
 +-- UnsafeForkError            this process was forked while Flight connections were open
 +-- AccessDeniedError          an admin call without the admin token, or a load outside the roots
 +-- UnsupportedCallError       a call or action this server does not serve
```

A server raises a Flight error whose ``extra_info`` is a small JSON document
(``{"code": ..., "retry_after": ...}``); the client turns it back into the typed error. Errors
carry what was wrong, never a server traceback (see ``trainer_data_cache.server.base``).
"""

from __future__ import annotations

import json
from typing import Final

import pyarrow.flight as flight

__all__ = [
    "AccessDeniedError",
    "CacheError",
    "DatasetNotFoundError",
    "InvalidArgumentError",
    "InvalidFilterError",
    "InvalidStateError",
    "MemoryBudgetExceededError",
    "NullValueError",
    "SchemaMismatchError",
    "SourceError",
    "StaleTicketError",
    "StreamFailedError",
    "UnknownColumnError",
    "UnsafeForkError",
    "UnsupportedCallError",
]


class CacheError(Exception):
    """Base of every error this package raises on purpose."""

    code: str = "cache-error"


class InvalidArgumentError(CacheError, ValueError):
    """An argument is out of range or of the wrong kind; the message names it."""

    code = "invalid-argument"


class SourceError(CacheError):
    """A source path is missing, unreadable, or of a format the cache does not read."""

    code = "source"


class SchemaMismatchError(CacheError):
    """The files of one source do not share one schema."""

    code = "schema-mismatch"


class UnknownColumnError(CacheError, KeyError):
    """A projection names a column the data does not have."""

    code = "unknown-column"

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class InvalidFilterError(CacheError, ValueError):
    """A filter is malformed, names an unknown column, or is not a boolean expression."""

    code = "invalid-filter"


class DatasetNotFoundError(CacheError, KeyError):
    """No dataset of that name is loaded."""

    code = "dataset-not-found"

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class StaleTicketError(CacheError):
    """The dataset was reloaded after the ticket was issued; ask for a new layout."""

    code = "stale-ticket"


class MemoryBudgetExceededError(CacheError, MemoryError):
    """A load would exceed a node's memory budget; the message carries the numbers."""

    code = "memory-budget"


class NullValueError(CacheError, ValueError):
    """A column holds nulls and no fill value was given for it."""

    code = "null-value"


class InvalidStateError(CacheError, ValueError):
    """A state dict does not match the dataset it is loaded into."""

    code = "invalid-state"


class StreamFailedError(CacheError, ConnectionError):
    """A stream could not be completed on any location before the overall timeout."""

    code = "stream-failed"


class UnsafeForkError(CacheError, RuntimeError):
    """This process was forked while Flight connections were open, so gRPC cannot work in it;
    the message names what was open and how to start workers instead (see
    ``trainer_data_cache.forks``).
    """

    code = "unsafe-fork"


class AccessDeniedError(CacheError, PermissionError):
    """An admin call (load, drop, put) without the admin token, or a load outside the head's
    load roots; the message says which."""

    code = "access-denied"


class UnsupportedCallError(CacheError):
    """A Flight call or action this server (head or node) does not serve."""

    code = "unsupported-call"


_BY_CODE: Final[dict[str, type[CacheError]]] = {
    error.code: error
    for error in (
        InvalidArgumentError,
        SourceError,
        SchemaMismatchError,
        UnknownColumnError,
        InvalidFilterError,
        DatasetNotFoundError,
        StaleTicketError,
        MemoryBudgetExceededError,
        NullValueError,
        InvalidStateError,
        AccessDeniedError,
        UnsupportedCallError,
    )
}


def to_flight_error(error: CacheError) -> flight.FlightError:
    """The Flight error a server raises for ``error``; the client maps it back."""
    info = json.dumps({"code": error.code}).encode()
    if isinstance(error, AccessDeniedError):
        return flight.FlightUnauthorizedError(str(error), extra_info=info)
    return flight.FlightServerError(str(error), extra_info=info)


def unavailable(message: str, retry_after: float) -> flight.FlightUnavailableError:
    """An Unavailable error telling the client to retry after ``retry_after`` seconds."""
    info = json.dumps({"code": "unavailable", "retry_after": retry_after}).encode()
    return flight.FlightUnavailableError(
        f"{message}; retry after {retry_after:g} s", extra_info=info
    )


def retry_after(error: flight.FlightError) -> float | None:
    """The retry hint an Unavailable error carries, if any."""
    detail = _detail(error)
    value = detail.get("retry_after")
    return float(value) if isinstance(value, (int, float)) else None


def from_flight_error(error: flight.FlightError) -> CacheError | None:
    """The typed error a server meant by ``error``, or None for a transport failure."""
    kind = _BY_CODE.get(str(_detail(error).get("code", "")))
    if kind is None:
        return None
    message = str(error)
    # gRPC appends its own detail to the message; keep what the server wrote.
    for marker in (". Detail:", ". gRPC client debug context"):
        message = message.split(marker)[0]
    return kind(message)


def _detail(error: flight.FlightError) -> dict[str, object]:
    try:
        detail = json.loads(bytes(error.extra_info or b"") or b"{}")
    except ValueError:
        return {}
    return detail if isinstance(detail, dict) else {}
