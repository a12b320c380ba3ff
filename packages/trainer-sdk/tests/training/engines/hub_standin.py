"""A Hugging Face Hub stand-in on loopback: the two calls the initializers make (a repository's
file list, a file's download), answered from local directories. Point ``HF_ENDPOINT`` at it."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote

__all__ = ["HubStandIn"]


class HubStandIn(ThreadingHTTPServer):
    """Serves ``repos`` ((``model`` or ``dataset``, ``org/name``) -> directory) on 127.0.0.1."""

    def __init__(self, repos: dict[tuple[str, str], Path]) -> None:
        self.repos = repos
        super().__init__(("127.0.0.1", 0), _Handler)

    def answer(self, path: str) -> bytes | None:
        """The body for a GET of ``path``, or None (404)."""
        for (kind, repo), directory in self.repos.items():
            prefix = "/datasets/" if kind == "dataset" else "/"
            if path == f"/api/{kind}s/{repo}/revision/main":
                files = sorted(p for p in directory.rglob("*") if p.is_file())
                siblings = [{"rfilename": str(p.relative_to(directory))} for p in files]
                return json.dumps({"siblings": siblings}).encode()
            download = f"{prefix}{repo}/resolve/main/"
            if path.startswith(download):
                file = directory / unquote(path[len(download) :])
                return file.read_bytes() if file.is_file() else None
        return None


class _Handler(BaseHTTPRequestHandler):
    server: HubStandIn

    def do_GET(self) -> None:
        body = self.server.answer(self.path)
        self.send_response(200 if body is not None else 404)
        self.send_header("Content-Length", str(len(body or b"")))
        self.end_headers()
        self.wfile.write(body or b"")

    def log_message(self, *args: Any) -> None:
        """Quiet."""
