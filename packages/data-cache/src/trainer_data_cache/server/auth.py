"""Bearer-token authentication for the cache's Flight servers."""

from __future__ import annotations

import hmac

import pyarrow.flight as flight

__all__ = ["BearerTokenMiddlewareFactory"]


class BearerTokenMiddlewareFactory(flight.ServerMiddlewareFactory):
    """Refuses every call whose ``authorization`` header is not ``Bearer <token>``."""

    def __init__(self, token: str) -> None:
        super().__init__()
        self._expected = f"Bearer {token}".encode()

    def start_call(
        self, info: flight.CallInfo, headers: dict[str, list[str]]
    ) -> flight.ServerMiddleware | None:
        values = headers.get("authorization", [])
        presented = values[0].encode() if values else b""
        if not hmac.compare_digest(presented, self._expected):
            raise flight.FlightUnauthenticatedError(
                "authorization: expected 'Bearer <token>' with the cache's token"
            )
        return None
