"""How clients (dataset, head, CLI) reach cache servers: TLS roots and a bearer token."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow.flight as flight

from trainer_data_cache import forks

__all__ = ["ConnectOptions"]


@dataclass(frozen=True)
class ConnectOptions:
    """Credentials for calls to a cache; plain ``grpc://`` without a token by default.

    ``tls_root_certs`` (PEM) verifies a ``grpc+tls://`` server; ``token`` is sent as
    ``authorization: Bearer <token>`` on every call.
    """

    token: str | None = None
    tls_root_certs: bytes | None = None

    def client(self, location: str) -> flight.FlightClient:
        """A new Flight client for ``location``, recorded as open (``forks``) until closed with
        ``forks.close``; raises ``UnsafeForkError`` in a child forked while clients were open."""
        forks.check()
        if self.tls_root_certs is not None:
            client = flight.FlightClient(location, tls_root_certs=self.tls_root_certs)
        else:
            client = flight.FlightClient(location)
        forks.opened(client, f"client of {location}")
        return client

    def call_options(self, timeout: float | None = None) -> flight.FlightCallOptions:
        """Call options carrying the token. Received buffers are left where gRPC put them:
        realigning them would copy every batch (a third of the read time on loopback)."""
        headers = [(b"authorization", f"Bearer {self.token}".encode())] if self.token else None
        return flight.FlightCallOptions(timeout=timeout, headers=headers)
