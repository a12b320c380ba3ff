"""What a driver injects into ``build``: randomness and the cluster's own endpoints."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass

from mpi_runtime import SSHKeyPair, generate_ssh_keypair

from trainer_runtime.curve import CurveKeyPair, generate_curve_keypair

__all__ = ["Settings", "StatusServer", "generate_cache_token"]


def generate_cache_token() -> str:
    """A random bearer token for a job's data cache (256 bits, URL-safe text)."""
    return secrets.token_urlsafe(32)


@dataclass(frozen=True)
class StatusServer:
    """Where trainers report progress: the controller's HTTPS endpoint and its CA certificate.

    ``url``: base URL such as ``https://trainer-controller.trainer-system.svc:10443``.
    ``ca_cert``: the PEM CA bundle trainers verify the server with.
    """

    url: str
    ca_cert: str


@dataclass(frozen=True)
class Settings:
    """Injected into ``build``; the defaults suit a real cluster.

    ``ssh_keypair``: called once per MPI job, only when its SSH Secret does not exist yet
    (tests pass a function returning a fixed key, so builds are deterministic).
    ``curve_keypair``: likewise for the CURVE certificate of a Flux job's brokers, called only
    when its Secret does not exist yet.
    ``cache_token``: likewise for the tokens of a job's data cache (called once for its read
    token and once for its admin token), only when its Secret does not exist yet.
    ``status_server``: when set, trainers get the progress-reporting env and volumes.
    """

    ssh_keypair: Callable[[], SSHKeyPair] = generate_ssh_keypair
    curve_keypair: Callable[[], CurveKeyPair] = generate_curve_keypair
    cache_token: Callable[[], str] = generate_cache_token
    status_server: StatusServer | None = None
