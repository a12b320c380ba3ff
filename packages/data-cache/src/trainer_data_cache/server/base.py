"""What the head and the nodes share: security, their advertised location, error translation.

Every RPC answers a failure as a Flight error whose message says what was wrong: a
``CacheError`` as its typed error, anything else (a bug) as Internal with the exception's
first line, its traceback going to this process's log only. A Python exception that reached
pyarrow instead would send the client the server's traceback.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

import pyarrow.flight as flight

from trainer_data_cache import forks
from trainer_data_cache.errors import (
    AccessDeniedError,
    CacheError,
    InvalidArgumentError,
    UnsupportedCallError,
    to_flight_error,
)
from trainer_data_cache.server.auth import MIDDLEWARE_KEY, BearerTokenMiddlewareFactory, Caller

__all__ = ["CacheServer", "ServerSecurity", "answering", "json_result", "translate_errors"]

_log = logging.getLogger("trainer_data_cache.server")

_F = TypeVar("_F", bound=Callable[..., Any])


@dataclass(frozen=True)
class ServerSecurity:
    """Optional TLS (PEM certificate and key) and bearer tokens for a server.

    ``token``: every call must present it (None: reads are anonymous). ``admin_token``: admin
    calls (load, drop, put) must present it; it defaults to ``token``, and with neither, admin
    calls are off (the process that owns the server can still load and drop in Python).
    """

    certificate: bytes | None = None
    private_key: bytes | None = None
    token: str | None = None
    admin_token: str | None = None

    @property
    def scheme(self) -> str:
        return "grpc+tls" if self.certificate is not None else "grpc"

    @property
    def admin(self) -> str | None:
        """The token admin calls must present, or None when they are off."""
        return self.admin_token or self.token


@contextlib.contextmanager
def answering(call: str) -> Iterator[None]:
    """Turn what ``call`` raises into a Flight error without a traceback (see the module)."""
    try:
        yield
    except flight.FlightError:
        raise  # already a status of its own: Unavailable with a retry hint, Unauthenticated
    except CacheError as error:
        raise to_flight_error(error) from None
    except Exception as error:
        _log.exception("%s failed", call)
        summary = (str(error).splitlines() or [""])[0]
        raise flight.FlightInternalError(
            f"{call}: internal error ({type(error).__name__}: {summary}); the server logged it"
        ) from None


def translate_errors(method: _F) -> _F:
    """Answer every failure of an RPC method as ``answering`` does."""

    @functools.wraps(method)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        with answering(method.__name__):
            return method(*args, **kwargs)

    return wrapped  # type: ignore[return-value]


class CacheServer(flight.FlightServerBase):
    """A Flight server bound to ``host:port`` (0 picks a free port) that advertises
    ``advertise_host`` (default ``host``) in the locations it hands out. Calls a subclass does
    not serve answer ``UnsupportedCallError``."""

    role: ClassVar[str] = "server"
    """What the server is, in messages: ``head`` or ``node``."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        security: ServerSecurity | None = None,
        advertise_host: str | None = None,
    ) -> None:
        security = security or ServerSecurity()
        if (security.certificate is None) != (security.private_key is None):
            raise InvalidArgumentError(
                "security: give both certificate and private_key for TLS, or neither"
            )
        self._admin_enabled = security.admin is not None
        middleware = {MIDDLEWARE_KEY: BearerTokenMiddlewareFactory(security.token, security.admin)}
        tls = (
            [(security.certificate, security.private_key)]
            if security.certificate is not None
            else None
        )
        forks.check()
        super().__init__(
            f"{security.scheme}://{host}:{port}", tls_certificates=tls, middleware=middleware
        )
        self.location = f"{security.scheme}://{advertise_host or host}:{self.port}"
        # gRPC stays up until the server is collected, not merely shut down.
        forks.opened(self, f"server at {self.location}")

    def __enter__(self) -> CacheServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.shutdown()

    def require_admin(self, context: flight.ServerCallContext, what: str) -> None:
        """Raise AccessDeniedError unless the call presented the admin token."""
        caller = context.get_middleware(MIDDLEWARE_KEY)
        if isinstance(caller, Caller) and caller.admin:
            return
        if self._admin_enabled:
            raise AccessDeniedError(f"{what}: an admin call; present the cache's admin token")
        raise AccessDeniedError(
            f"{what}: admin calls are off: this {self.role} was started without an admin token"
        )

    def unsupported(self, call: str) -> UnsupportedCallError:
        return UnsupportedCallError(f"{call}: the cache's {self.role} does not serve this call")

    # Calls the subclasses override where they serve them.

    @translate_errors
    def list_flights(
        self, context: flight.ServerCallContext, criteria: bytes
    ) -> list[flight.FlightInfo]:
        raise self.unsupported("list_flights")

    @translate_errors
    def get_flight_info(
        self, context: flight.ServerCallContext, descriptor: flight.FlightDescriptor
    ) -> flight.FlightInfo:
        raise self.unsupported("get_flight_info")

    @translate_errors
    def get_schema(
        self, context: flight.ServerCallContext, descriptor: flight.FlightDescriptor
    ) -> flight.SchemaResult:
        raise self.unsupported("get_schema")

    @translate_errors
    def do_get(
        self, context: flight.ServerCallContext, ticket: flight.Ticket
    ) -> flight.FlightDataStream:
        raise self.unsupported("do_get")

    @translate_errors
    def do_put(
        self,
        context: flight.ServerCallContext,
        descriptor: flight.FlightDescriptor,
        reader: flight.MetadataRecordBatchReader,
        writer: flight.FlightMetadataWriter,
    ) -> None:
        raise self.unsupported("do_put")

    @translate_errors
    def do_exchange(
        self,
        context: flight.ServerCallContext,
        descriptor: flight.FlightDescriptor,
        reader: flight.MetadataRecordBatchReader,
        writer: flight.MetadataRecordBatchWriter,
    ) -> None:
        raise self.unsupported("do_exchange")

    @translate_errors
    def do_action(
        self, context: flight.ServerCallContext, action: flight.Action
    ) -> list[flight.Result]:
        raise self.unsupported(f"action {action.type!r}")


def json_result(document: object) -> list[flight.Result]:
    """One action result holding ``document`` as JSON."""
    return [flight.Result(json.dumps(document).encode())]
