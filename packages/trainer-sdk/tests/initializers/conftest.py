"""A tiny HTTP server on loopback that serves a fixed table of paths and records requests."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, HTTPServer, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass
class Fixture:
    """Routes (path with query -> body) and the requests seen (path, headers)."""

    url: str = ""
    routes: dict[str, bytes] = field(default_factory=dict)
    seen: list[tuple[str, dict[str, str]]] = field(default_factory=list)


@pytest.fixture
def http_fixture(serve: Callable[[HTTPServer], str]) -> Fixture:
    state = Fixture()

    class Handler(BaseHTTPRequestHandler):
        """Answers GETs from ``state.routes``; 404 otherwise."""

        def do_GET(self) -> None:
            state.seen.append((self.path, dict(self.headers)))
            body = state.routes.get(self.path)
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Length", str(len(body or b"")))
            self.end_headers()
            self.wfile.write(body or b"")

        def log_message(self, *args: Any) -> None:
            """Quiet."""

    state.url = serve(ThreadingHTTPServer(("127.0.0.1", 0), Handler))
    return state
