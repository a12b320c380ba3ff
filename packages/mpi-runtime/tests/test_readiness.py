import socket
import threading
from collections.abc import Iterator

import pytest
from mpi_runtime import HostNotReadyError
from mpi_runtime.readiness import is_this_machine, probe_sshd, wait_for_hosts


class FakeClock:
    """A clock that moves only when ``pause`` is called."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def pause(self, seconds: float) -> None:
        self.now += max(seconds, 0.01)


def test_wait_returns_once_every_host_answers() -> None:
    clock = FakeClock()
    ready_at = {"node-0": 0.5, "node-1": 1.0}
    probed: list[str] = []

    def probe(host: str, port: int, timeout: float) -> str | None:
        probed.append(host)
        return None if clock.now >= ready_at[host] else "refused"

    wait_for_hosts(["node-0", "node-1"], 2222, 5.0, probe=probe, clock=clock, pause=clock.pause)
    assert 1.0 <= clock.now < 1.2
    assert probed[-1] == "node-1" and "node-0" in probed


def test_wait_names_the_host_that_never_came_up_at_the_deadline() -> None:
    clock = FakeClock()

    def probe(host: str, port: int, timeout: float) -> str | None:
        return None if host == "node-0" else "name does not resolve"

    with pytest.raises(HostNotReadyError, match=r"host 'node-1' did not come up: name does") as e:
        wait_for_hosts(["node-0", "node-1"], 2222, 3.0, probe=probe, clock=clock, pause=clock.pause)
    assert e.value.host == "node-1" and e.value.port == 2222
    assert 3.0 <= clock.now < 3.2


@pytest.fixture
def banner_server() -> Iterator[int]:
    """A TCP server on port 0 that greets one connection with an SSH banner."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(10)

    def serve_once() -> None:
        connection, _ = server.accept()
        with connection:
            connection.sendall(b"SSH-2.0-test\r\n")

    thread = threading.Thread(target=serve_once, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    thread.join(timeout=10)
    server.close()


def test_probe_accepts_a_real_banner(banner_server: int) -> None:
    assert probe_sshd("127.0.0.1", banner_server, 2.0) is None


def test_probe_explains_refused_and_unresolvable() -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    assert "refused" in (probe_sshd("127.0.0.1", port, 2.0) or "").lower()
    assert "does not resolve" in (probe_sshd("node-0.does-not-exist.invalid", port, 2.0) or "")


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        pytest.param("localhost", True, id="localhost"),
        pytest.param(socket.gethostname(), True, id="hostname"),
        pytest.param(socket.gethostname().split(".")[0] + ".svc", True, id="pod-dns-name"),
        pytest.param("127.0.0.2", False, id="other-loopback-address"),
        pytest.param("node-0.job", False, id="other-host"),
    ],
)
def test_is_this_machine(host: str, expected: bool) -> None:
    assert is_this_machine(host) is expected
