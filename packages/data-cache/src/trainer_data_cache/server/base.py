"""What the head and the nodes share: security, their advertised location, error translation."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import pyarrow.flight as flight

from trainer_data_cache import forks
from trainer_data_cache.errors import CacheError, InvalidArgumentError, to_flight_error
from trainer_data_cache.server.auth import BearerTokenMiddlewareFactory

__all__ = ["CacheServer", "ServerSecurity", "json_result", "translate_errors"]

_F = TypeVar("_F", bound=Callable[..., Any])


@dataclass(frozen=True)
class ServerSecurity:
    """Optional TLS (PEM certificate and key) and bearer token for a server."""

    certificate: bytes | None = None
    private_key: bytes | None = None
    token: str | None = None

    @property
    def scheme(self) -> str:
        return "grpc+tls" if self.certificate is not None else "grpc"


def translate_errors(method: _F) -> _F:
    """Raise a CacheError from an RPC as the Flight error its client maps back."""

    @functools.wraps(method)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except CacheError as error:
            raise to_flight_error(error) from error

    return wrapped  # type: ignore[return-value]


class CacheServer(flight.FlightServerBase):
    """A Flight server bound to ``host:port`` (0 picks a free port) that advertises
    ``advertise_host`` (default ``host``) in the locations it hands out."""

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
        middleware = (
            {"auth": BearerTokenMiddlewareFactory(security.token)} if security.token else None
        )
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


def json_result(document: object) -> list[flight.Result]:
    """One action result holding ``document`` as JSON."""
    return [flight.Result(json.dumps(document).encode())]
