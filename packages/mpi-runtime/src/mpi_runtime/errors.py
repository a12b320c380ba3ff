"""Errors raised by mpi_runtime.

MPIRuntimeError
 ├── InvalidArgumentError (also a ValueError)   bad input; names the argument
 ├── HostNotReadyError                          a host never resolved or its sshd never answered
 └── RanksNotStartedError                       ranks never started within the start timeout
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["HostNotReadyError", "InvalidArgumentError", "MPIRuntimeError", "RanksNotStartedError"]


class MPIRuntimeError(Exception):
    """Base of every error this package raises."""


class InvalidArgumentError(MPIRuntimeError, ValueError):
    """An argument has a value this package cannot use; ``argument`` names it."""

    def __init__(self, argument: str, message: str) -> None:
        super().__init__(f"{argument}: {message}")
        self.argument = argument


class HostNotReadyError(MPIRuntimeError):
    """A host never became reachable within the wait bound; ``host`` names it."""

    def __init__(self, host: str, port: int, reason: str, waited_s: float) -> None:
        super().__init__(
            f"host {host!r} did not come up: {reason} (port {port}, waited {waited_s:.1f}s); "
            "check that its worker pod is running and that its sshd listens on that port"
        )
        self.host = host
        self.port = port
        self.reason = reason


class RanksNotStartedError(MPIRuntimeError):
    """Ranks did not start within the bound; ``hosts`` names the hosts to blame.

    ``unreached``: ssh never got into those hosts; else it did, and the MPI daemon or the ranks
    did not start there.
    """

    def __init__(
        self, hosts: Sequence[str], ranks: Sequence[int], timeout_s: float, *, unreached: bool
    ) -> None:
        where = (
            "ssh never got into them (check their sshd and the network)"
            if unreached
            else "ssh got in, but the MPI daemon or the ranks did not start there (check that "
            "a login there is quick: the login shell's startup files run first; and that the "
            "MPI daemon is on its PATH)"
        )
        super().__init__(
            f"ranks never started on host(s) {', '.join(hosts)} within {timeout_s:g}s: {where}; "
            f"{len(ranks)} rank(s) missing ({_span(ranks)}); mpirun and its ssh sessions "
            "were stopped"
        )
        self.hosts = tuple(hosts)
        self.ranks = tuple(ranks)
        self.unreached = unreached


def _span(ranks: Sequence[int]) -> str:
    """``ranks`` for a message: ``rank 3``, ``ranks 0-7`` or ``ranks 0, 2``."""
    if len(ranks) == 1:
        return f"rank {ranks[0]}"
    if list(ranks) == list(range(ranks[0], ranks[0] + len(ranks))):
        return f"ranks {ranks[0]}-{ranks[-1]}"
    return "ranks " + ", ".join(map(str, ranks))
