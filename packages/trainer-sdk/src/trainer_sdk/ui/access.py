"""Who may use the UI: loopback binds are open to this machine, any other bind needs the token.

The rules, checked on every request (``Access.refusal``):

- the ``Host`` header must name the address the server was bound to, or a loopback name when
  that is loopback (a page on another site cannot reach the UI through DNS rebinding);
- with a token (always for a non-loopback bind): ``Authorization: Bearer TOKEN``, the
  ``trainer-ui-token`` cookie, or ``?token=TOKEN`` on the first page, which sets that cookie
  (HttpOnly, SameSite=Strict) and redirects to the same page without the token;
- tokens are compared as UTF-8 bytes in constant time, so any text a client sends is a wrong
  token (401), never a crash; an empty token is refused when the server starts;
- writes (stop, delete) must carry the ``X-Trainer-UI`` header, which a cross-site form cannot
  send and a cross-site script cannot send without a CORS preflight the server never grants.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from http.cookies import SimpleCookie
from typing import Final

__all__ = [
    "COOKIE_NAME",
    "WRITE_HEADER",
    "Access",
    "is_loopback",
    "new_token",
]

COOKIE_NAME: Final = "trainer-ui-token"
WRITE_HEADER: Final = "X-Trainer-UI"
_LOOPBACK_NAMES: Final = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address) is this machine only."""
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def new_token() -> str:
    """A random token for a non-loopback bind."""
    return secrets.token_urlsafe(24)


def _host_name(header: str) -> str:
    """The host part of a ``Host`` header (``[::1]:8080`` -> ``::1``)."""
    if header.startswith("["):
        return header[1 : header.index("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


@dataclass(frozen=True)
class Access:
    """The bind address and the token (None: no token; only for loopback binds)."""

    host: str
    token: str | None

    def __post_init__(self) -> None:
        if self.token is not None and not self.token.strip():
            raise ValueError(
                "token: expected a non-empty token (an empty one would let anyone in); leave "
                "--token out to get a random one"
            )
        if self.token is None and not is_loopback(self.host):
            raise ValueError(
                f"token: binding {self.host!r} (not loopback) needs a token, so that only whoever "
                "the command's output was shown to can use the UI"
            )

    def host_allowed(self, header: str | None) -> bool:
        """Whether the ``Host`` header names this server."""
        if not header:
            return False
        name = _host_name(header).lower()
        if self.host in ("0.0.0.0", "::"):
            return True  # any address of this machine; the token guards it
        return name == self.host.lower() or (is_loopback(self.host) and is_loopback(name))

    def token_given(self, headers: Mapping[str, str], query_token: str | None) -> bool:
        """Whether the request carries the token (always true without one)."""
        if self.token is None:
            return True
        candidates = [query_token or ""]
        authorization = headers.get("authorization", "")
        if authorization.startswith("Bearer "):
            candidates.append(authorization[len("Bearer ") :])
        cookie: SimpleCookie = SimpleCookie(headers.get("cookie", ""))
        if COOKIE_NAME in cookie:
            candidates.append(cookie[COOKIE_NAME].value)
        expected = self.token.encode()
        return any(
            hmac.compare_digest(given.encode(errors="surrogatepass"), expected)
            for given in candidates
        )

    def refusal(
        self, method: str, headers: Mapping[str, str], query_token: str | None
    ) -> tuple[int, str] | None:
        """None when the request may proceed, else the HTTP status and why not (``headers``:
        lower-case names, or a case-insensitive mapping such as aiohttp's)."""
        if not self.host_allowed(headers.get("host")):
            return 403, f"Host {headers.get('host')!r} is not this server's address"
        if not self.token_given(headers, query_token):
            return 401, "a token is needed: open the URL `trainer ui` printed"
        if method not in ("GET", "HEAD") and headers.get(WRITE_HEADER.lower()) != "1":
            return 403, f"writes need the {WRITE_HEADER} header"
        return None
