"""Who a call comes from: the bearer tokens of the cache's Flight servers.

A server may have a read token (every call must present it) and an admin token (admin calls,
which change what the cache holds, must present it; it also passes where the read token is
asked). Without a read token, reads are anonymous; without an admin token, admin calls are off.
"""

from __future__ import annotations

import hmac
from typing import Final

import pyarrow.flight as flight

__all__ = ["MIDDLEWARE_KEY", "BearerTokenMiddlewareFactory", "Caller"]

MIDDLEWARE_KEY: Final = "auth"
"""The key under which a call's ``Caller`` is found (``context.get_middleware``)."""


class Caller(flight.ServerMiddleware):
    """The credential one call presented: ``admin`` when it was the admin token."""

    def __init__(self, admin: bool) -> None:
        super().__init__()
        self.admin = admin


class BearerTokenMiddlewareFactory(flight.ServerMiddlewareFactory):
    """Refuses a call whose ``authorization`` header is not ``Bearer <token>`` with the read
    token (when there is one) or the admin token, and records whether it was the admin token."""

    def __init__(self, token: str | None, admin_token: str | None) -> None:
        super().__init__()
        self._read = f"Bearer {token}".encode() if token else None
        self._admin = f"Bearer {admin_token}".encode() if admin_token else None

    def start_call(self, info: flight.CallInfo, headers: dict[str, list[str]]) -> Caller:
        values = headers.get("authorization", [])
        presented = values[0].encode() if values else b""
        admin = self._admin is not None and hmac.compare_digest(presented, self._admin)
        if not admin and self._read is not None and not hmac.compare_digest(presented, self._read):
            raise flight.FlightUnauthenticatedError(
                "authorization: expected 'Bearer <token>' with the cache's token"
            )
        return Caller(admin)
