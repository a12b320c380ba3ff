"""Waiting, bounded, until every host resolves and its sshd answers.

Launchers often start before their workers: pod DNS names appear only once a pod exists, and sshd
needs a moment to listen. ``wait_for_hosts`` polls each host (resolve, connect, read the ``SSH-``
banner) until one shared deadline, and names the first host that never came up.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Sequence

from mpi_runtime._arguments import require_positive_int
from mpi_runtime.errors import HostNotReadyError, InvalidArgumentError

__all__ = ["is_this_machine", "probe_sshd", "wait_for_hosts"]

_RETRY_INTERVAL_S = 0.1
_CONNECT_TIMEOUT_S = 2.0


def probe_sshd(host: str, port: int, timeout_s: float) -> str | None:
    """None when ``host`` resolves and an sshd answers on ``port``; else why not."""
    try:
        addresses = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as error:
        return f"name does not resolve ({error.strerror})"
    reasons = []
    for family, kind, protocol, _, address in addresses:
        try:
            with socket.socket(family, kind, protocol) as connection:
                connection.settimeout(timeout_s)
                connection.connect(address)
                banner = connection.recv(256)
        except OSError as error:
            reasons.append(f"{address[0]}: {error.strerror or error}")
            continue
        if banner.startswith(b"SSH-"):
            return None
        reasons.append(f"{address[0]}: no SSH banner (got {banner[:40]!r})")
    return "; ".join(reasons)


def is_this_machine(host: str) -> bool:
    """Whether ``host`` names this machine (as mpirun sees it), so no sshd is needed there."""
    short_name = socket.gethostname().split(".")[0]
    return host in ("localhost", "127.0.0.1", "::1") or host.split(".")[0] == short_name


def wait_for_hosts(
    hosts: Sequence[str],
    port: int,
    timeout_s: float,
    *,
    probe: Callable[[str, int, float], str | None] = probe_sshd,
    clock: Callable[[], float] = time.monotonic,
    pause: Callable[[float], None] = time.sleep,
) -> None:
    """Return once every host's sshd answers; raise HostNotReadyError at the deadline."""
    require_positive_int(port, "port")
    if timeout_s < 0:
        raise InvalidArgumentError("timeout_s", f"expected seconds >= 0, got {timeout_s!r}")
    start = clock()
    deadline = start + timeout_s
    for host in hosts:
        while reason := probe(host, port, min(_CONNECT_TIMEOUT_S, max(deadline - clock(), 0.01))):
            if clock() >= deadline:
                raise HostNotReadyError(host, port, reason, clock() - start)
            pause(min(_RETRY_INTERVAL_S, max(deadline - clock(), 0.0)))
