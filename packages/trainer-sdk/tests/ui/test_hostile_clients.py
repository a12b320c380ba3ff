"""The UI server against hostile clients on the wire: idle sockets, empty and non-ASCII tokens,
huge logs (issue 25, items 2, 3, 4 and 6)."""

from __future__ import annotations

import socket
import threading
import tracemalloc
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import ExitStack, closing
from pathlib import Path

import pytest
from click.testing import CliRunner
from trainer_sdk import LocalBackendConfig, TrainerClient
from trainer_sdk.cli import cli
from trainer_sdk.ui import Access, UiServer
from trainer_sdk.ui.connections import DEFAULT_LIMITS, ConnectionLimits
from waiting import wait_until

WAIT_SECONDS = 180
IDLE_CLIENTS = 200
LOG_LINES = 40_000  # of 1,000 characters: a 40 MB log
CHATTY_JOB = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "TrainJob",
    "metadata": {"name": "chatty"},
    "spec": {
        "runtimeRef": {"name": "torch-distributed"},
        "trainer": {
            "numNodes": 1,
            "command": [
                "python",
                "-c",
                f"import sys\nfor i in range({LOG_LINES}): sys.stdout.write('x' * 999 + '\\n')",
            ],
        },
    },
}


def address(server: UiServer) -> tuple[str, int]:
    return "127.0.0.1", server.server_address[1]


def raw_answer(server: UiServer, request: bytes) -> bytes:
    """What the server sends back for ``request`` (bytes as given) until it closes."""
    with closing(socket.create_connection(address(server), timeout=30)) as connection:
        connection.sendall(request)
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
        return answer


@pytest.fixture
def empty(tmp_path: Path) -> TrainerClient:
    return TrainerClient(LocalBackendConfig(root=tmp_path / "jobs"))


def test_a_client_that_never_finishes_its_headers_is_dropped(
    empty: TrainerClient, start_ui: Callable[..., UiServer]
) -> None:
    server = start_ui(empty, limits=ConnectionLimits(header_seconds=0.5))
    with closing(socket.create_connection(address(server), timeout=20)) as connection:
        connection.sendall(b"GET /api/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        # closed by the server: our own timeout (20 s) would raise instead
        assert connection.recv(1024) == b""


def test_idle_connections_do_not_lock_out_a_real_request(
    empty: TrainerClient, start_ui: Callable[..., UiServer]
) -> None:
    before = threading.active_count()
    server = start_ui(empty)
    with ExitStack() as idle:
        for _ in range(IDLE_CLIENTS):
            connection = idle.enter_context(
                closing(socket.create_connection(address(server), timeout=30))
            )
            connection.sendall(b"GET /api/jobs HTTP/1.1\r\n")
        base = server.url.rstrip("/")
        with urllib.request.urlopen(f"{base}/api/jobs", timeout=10) as response:
            assert (response.status, response.read()) == (200, b"[]")
        wait_until(
            lambda: threading.active_count() - before <= DEFAULT_LIMITS.max_connections + 4,
            f"at most {DEFAULT_LIMITS.max_connections + 4} threads held",
        )


@pytest.mark.parametrize("host", ["127.0.0.1", "0.0.0.0"])
def test_an_empty_token_is_refused(host: str) -> None:
    with pytest.raises(ValueError, match="token: expected a non-empty token"):
        Access(host, "")


def test_the_cli_refuses_an_empty_token(tmp_path: Path) -> None:
    arguments = ["--backend", "local", "--root", str(tmp_path), "ui", "--host", "0.0.0.0"]
    result = CliRunner().invoke(cli, [*arguments, "--port", "0", "--token", ""])
    assert result.exit_code == 2 and "--token: expected a non-empty token" in result.output


@pytest.mark.parametrize(
    "credential",
    [
        pytest.param(b"GET /api/jobs?token=%C3%A9 HTTP/1.1\r\n", id="query"),
        pytest.param(b"GET /api/jobs HTTP/1.1\r\nAuthorization: Bearer \xe9\r\n", id="bearer"),
        pytest.param(
            b"GET /api/jobs HTTP/1.1\r\nCookie: trainer-ui-token=\xc3\xa9\r\n", id="cookie"
        ),
    ],
)
def test_a_non_ascii_credential_is_a_wrong_token(
    empty: TrainerClient, start_ui: Callable[..., UiServer], credential: bytes
) -> None:
    server = start_ui(empty, token="t0ken")
    answer = raw_answer(server, credential + b"Host: 127.0.0.1\r\nConnection: close\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 401 ")


@pytest.fixture
def chatty(tmp_path: Path) -> Iterator[TrainerClient]:
    client = TrainerClient(LocalBackendConfig(root=tmp_path / "jobs"))
    client.submit(CHATTY_JOB)
    client.wait_for_job_status("chatty", timeout=WAIT_SECONDS)
    yield client


def peak_bytes_while_reading(url: str) -> tuple[int, int]:
    """Bytes read from ``url`` and the peak of Python memory traced meanwhile (server included)."""
    received = 0
    tracemalloc.start()
    try:
        with urllib.request.urlopen(url, timeout=120) as response:
            while chunk := response.read(1 << 20):
                received += len(chunk)
        return received, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.e2e  # the local backend's log file, streamed: a real job writes it
@pytest.mark.parametrize("path", ["logs?step=node-0&download=1", "logs/stream?step=node-0"])
def test_log_answers_are_streamed_not_read_whole(
    chatty: TrainerClient, start_ui: Callable[..., UiServer], path: str
) -> None:
    base = start_ui(chatty).url.rstrip("/")
    received, peak = peak_bytes_while_reading(f"{base}/api/jobs/chatty/{path}")
    assert received >= LOG_LINES * 1000
    assert peak < 8 * 1024 * 1024, f"peak {peak / 2**20:.1f} MiB for a 40 MB log"
