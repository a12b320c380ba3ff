"""Errors raised by mpi_runtime.

MPIRuntimeError
 ├── InvalidArgumentError (also a ValueError)   bad input; names the argument
 └── HostNotReadyError                          a host never resolved or its sshd never answered
"""

from __future__ import annotations

__all__ = ["HostNotReadyError", "InvalidArgumentError", "MPIRuntimeError"]


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
