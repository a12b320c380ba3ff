"""Bounding the start of ranks: every rank reports that it started, the launcher waits, bounded.

mpirun waits forever for an MPI daemon that never starts on a host (an ssh session that hangs,
a login shell that never gets to ``orted``), and Open MPI 4.1 has no timeout for that phase:
``orte_startup_timeout`` is armed only once every daemon has reported (checked with a hanging
ssh: mpirun still waited). So ``mpi-launch`` listens on a TCP port (``StartWatch``) and gives
every rank ``MPI_LAUNCH_START_REPORT=HOST:PORT TOKEN``; each rank, through the
``mpi_runtime.with_rank_env`` or ``mpi_runtime.with_start_report`` wrapper, connects and sends
``TOKEN RANK`` (``report_start``) before it runs the program. Ranks that have not reported when
the start timeout passes are mapped to their hosts through the hostfile (``hosts_of``).
"""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Final

from mpi_runtime.errors import InvalidArgumentError, RanksNotStartedError
from mpi_runtime.rank_envs import RANK_ENV_SOURCES

__all__ = [
    "START_REPORT_ENV",
    "StartWatch",
    "blame",
    "hosts_of",
    "report_start",
    "report_start_or_warn",
    "route_address",
]

START_REPORT_ENV: Final = "MPI_LAUNCH_START_REPORT"
"""Set by ``mpi-launch`` on every rank: ``HOST:PORT TOKEN``, where the rank reports its start."""

_READ_TIMEOUT_S: Final = 5.0
_POLL_INTERVAL_S: Final = 0.2


def report_start(environ: Mapping[str, str], timeout_s: float = 10.0) -> str | None:
    """Tell the launcher that this rank started, when it asked (``START_REPORT_ENV``).

    None when reported or not asked; else why the report failed (the caller warns and runs the
    program anyway: the launcher then names this rank's host when its start timeout passes).
    """
    value = environ.get(START_REPORT_ENV)
    if not value:
        return None
    address, _, token = value.partition(" ")
    host, _, port = address.rpartition(":")
    rank = next((environ[name] for name in RANK_ENV_SOURCES["RANK"] if name in environ), None)
    if rank is None:
        return f"none of {', '.join(RANK_ENV_SOURCES['RANK'])} is set; run under mpirun"
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s) as connection:
            connection.sendall(f"{token} {rank}\n".encode())
    except (OSError, ValueError) as error:
        return f"could not report rank {rank}'s start to {address}: {error}"
    return None


def report_start_or_warn(environ: Mapping[str, str], program: str) -> None:
    """``report_start``; a failure is printed as a warning by ``program`` and otherwise ignored."""
    reason = report_start(environ)
    if reason is not None:
        print(f"{program}: warning: {reason}", file=sys.stderr, flush=True)


def route_address(host: str, port: int) -> str:
    """This machine's address on the route to ``host`` (where ranks there can reach us)."""
    family, kind, protocol, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_DGRAM)[0]
    with socket.socket(family, kind, protocol) as probe:
        probe.connect(address)  # UDP: no packet is sent, the kernel only picks the route
        return str(probe.getsockname()[0])


def hosts_of(ranks: Sequence[int], rank_hosts: Sequence[str]) -> list[str]:
    """The hosts of ``ranks`` (index into ``rank_hosts``), each once, in rank order."""
    hosts = [rank_hosts[rank] if rank < len(rank_hosts) else "(unknown host)" for rank in ranks]
    return list(dict.fromkeys(hosts))


def blame(
    missing: Sequence[int],
    rank_hosts: Sequence[str],
    remote_hosts: Sequence[str],
    connected: Collection[str],
    timeout_s: float,
) -> RanksNotStartedError:
    """The error for ranks ``missing`` at the deadline.

    It names the hosts of missing ranks that ssh never got into (``connected`` lists those it
    did), when there are such; else every host of a missing rank. Open MPI starts no rank
    before the daemon of every host is up, so one stuck host leaves every rank missing: the
    ssh connections tell which host held the others back.
    """
    hosts = hosts_of(missing, rank_hosts)
    unreached = [host for host in hosts if host in remote_hosts and host not in connected]
    return RanksNotStartedError(unreached or hosts, missing, timeout_s, unreached=bool(unreached))


class StartWatch:
    """A TCP listener on ``address`` that records the ranks that reported their start."""

    def __init__(self, address: str, token: str | None = None) -> None:
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        self._server = socket.create_server((address, 0), family=family)
        # secrets imports OpenSSL's hashlib: here, not at mpi-launch's every start.
        import secrets

        self._token = token or secrets.token_hex(16)
        self._started: set[int] = set()
        self._changed = threading.Condition()
        self.env_value = f"{address}:{self._server.getsockname()[1]} {self._token}"
        """The value of ``START_REPORT_ENV`` for the ranks."""
        threading.Thread(target=self._accept, name="mpi-launch-start-watch", daemon=True).start()

    def _accept(self) -> None:
        import secrets  # see __init__

        while True:
            try:
                connection, _ = self._server.accept()
            except OSError:  # closed
                return
            with connection:
                connection.settimeout(_READ_TIMEOUT_S)
                try:
                    token, _, rank = connection.recv(256).decode().strip().partition(" ")
                except (OSError, UnicodeDecodeError):
                    continue
            if secrets.compare_digest(token, self._token) and rank.isdigit():
                with self._changed:
                    self._started.add(int(rank))
                    self._changed.notify_all()

    def started(self) -> set[int]:
        """The ranks that have reported so far."""
        with self._changed:
            return set(self._started)

    def wait(
        self,
        ranks: int,
        timeout_s: float,
        is_done: Callable[[], bool],
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> list[int]:
        """The ranks of ``range(ranks)`` that did not report within ``timeout_s``.

        Empty when every rank reported, or when ``is_done()`` (polled) became true first.
        """
        if timeout_s <= 0:
            raise InvalidArgumentError("timeout_s", f"expected seconds > 0, got {timeout_s!r}")
        deadline = clock() + timeout_s
        with self._changed:
            while missing := [rank for rank in range(ranks) if rank not in self._started]:
                left = deadline - clock()
                if is_done():
                    return []
                if left <= 0:
                    return missing
                self._changed.wait(min(left, _POLL_INTERVAL_S))
        return []

    def close(self) -> None:
        """Stop listening (``shutdown`` wakes the thread blocked in ``accept``)."""
        with contextlib.suppress(OSError):
            self._server.shutdown(socket.SHUT_RDWR)
        self._server.close()

    def __enter__(self) -> StartWatch:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
