"""sshd config for workers and ssh client config for the launcher.

The worker's sshd runs in the foreground as the container's user (root or not): it needs no
privilege separation user of its own, reads the job's key as host key, trusts the job's public key,
and does not check file modes (``StrictModes no``), because Secret mounts have modes ssh did not
choose. The client skips host-key checks (``StrictHostKeyChecking no``,
``UserKnownHostsFile /dev/null``): pods are new on every run, and the job's own key pair is what
authenticates both ends.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

from mpi_runtime._arguments import require_positive_int
from mpi_runtime.errors import InvalidArgumentError

__all__ = ["SSH_PORT", "ssh_client_config", "sshd_config"]

SSH_PORT: Final = 2222
"""The port workers' sshd listens on (non-root users cannot bind 22)."""


def _lines(options: Sequence[tuple[str, str]]) -> str:
    return "".join(f"{key} {value}\n" for key, value in options)


def _set_env(variables: Mapping[str, str]) -> str:
    for name, value in variables.items():
        if not value or any(character in value for character in " \"'\\\n"):
            raise InvalidArgumentError(
                f"SetEnv {name}", f"expected a value without spaces or quotes, got {value!r}"
            )
    return " ".join(f"{name}={value}" for name, value in variables.items())


def sshd_config(
    host_key: Path,
    authorized_keys: Path,
    *,
    port: int = SSH_PORT,
    listen_addresses: Sequence[str] = (),
) -> str:
    """The worker's sshd config: key-only logins on ``port``; no PAM, pid file or mode checks."""
    require_positive_int(port, "port")
    options = [("Port", str(port))]
    options += [("ListenAddress", address) for address in listen_addresses]
    options += [
        ("HostKey", str(host_key)),
        ("AuthorizedKeysFile", str(authorized_keys)),
        ("PubkeyAuthentication", "yes"),
        ("PasswordAuthentication", "no"),
        ("KbdInteractiveAuthentication", "no"),
        ("PermitRootLogin", "prohibit-password"),
        ("StrictModes", "no"),
        ("UsePAM", "no"),
        ("PidFile", "none"),
        ("PrintMotd", "no"),
        ("UseDNS", "no"),
        ("MaxStartups", "100:30:200"),
        ("AcceptEnv", "*"),
    ]
    return _lines(options)


def ssh_client_config(
    *,
    port: int = SSH_PORT,
    identity_file: Path | None = None,
    connection_log: Path | None = None,
    set_env: Mapping[str, str] | None = None,
    host_env: Mapping[str, Mapping[str, str]] | None = None,
) -> str:
    """The launcher's ssh client config for every host: ``port``, no host-key checks, batch mode.

    ``connection_log``: each connection, once authenticated, appends its host (as mpirun named
    it) to this file on the launcher (ssh's ``LocalCommand``), so that a host ssh never got into
    can be told from one where the MPI daemon did not start.
    ``set_env``: variables for the remote session (``SetEnv``; the worker's sshd accepts all).
    ``host_env``: more variables for the sessions on one host each (ssh takes the first
    ``SetEnv`` that applies, so each host's block repeats ``set_env``).
    """
    require_positive_int(port, "port")
    options: list[tuple[str, str]] = []
    for host, variables in (host_env or {}).items():
        options += [("Host", host), ("SetEnv", _set_env({**(set_env or {}), **variables}))]
    options += [("Host", "*"), ("Port", str(port))]
    if identity_file is not None:
        options += [("IdentityFile", str(identity_file)), ("IdentitiesOnly", "yes")]
    options += [
        ("StrictHostKeyChecking", "no"),
        ("UserKnownHostsFile", "/dev/null"),
        ("LogLevel", "ERROR"),
        ("BatchMode", "yes"),
        ("ConnectionAttempts", "10"),
    ]
    if set_env:
        options.append(("SetEnv", _set_env(set_env)))
    if connection_log is not None:
        if '"' in str(connection_log) or "%" in str(connection_log):
            raise InvalidArgumentError(
                "connection_log", f'expected a path without " or %, got {str(connection_log)!r}'
            )
        options += [
            ("PermitLocalCommand", "yes"),
            ("LocalCommand", f'echo %n >> "{connection_log}"'),
        ]
    return _lines(options)
