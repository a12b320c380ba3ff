"""``mpi-worker``: run the worker's sshd in the foreground with the job's mounted keys.

The key is used as the host key too; when it is ours and exposed (root with ``fsGroup``) it is
copied to a 0600 file first, since sshd refuses such a host key. As root, sshd needs its privilege
separation directory, which slim images lack; it is created.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Final, NoReturn

from mpi_runtime._versions import VersionAction
from mpi_runtime.errors import InvalidArgumentError
from mpi_runtime.ssh_configs import SSH_PORT, sshd_config
from mpi_runtime.ssh_keys import SSH_AUTH_FILES, SSH_PRIVATE_KEY_FILE, private_identity

__all__ = ["find_sshd", "prepare_sshd", "run_sshd"]

_PRIVILEGE_SEPARATION_DIR: Final = Path("/run/sshd")
_AUTHORIZED_KEYS: Final = SSH_AUTH_FILES[-1][1]


def find_sshd() -> str:
    """The absolute path of sshd (sshd re-executes itself, so it must be absolute)."""
    search = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/usr/local/sbin"])
    path = shutil.which("sshd", path=search)
    if path is None:
        raise InvalidArgumentError("sshd", "not found on PATH, /usr/sbin or /usr/local/sbin")
    return os.path.abspath(path)


def prepare_sshd(
    ssh_dir: Path, state_dir: Path, *, port: int = SSH_PORT, listen_addresses: Sequence[str] = ()
) -> Path:
    """Write the sshd config for the keys in ``ssh_dir`` into ``state_dir``; return its path."""
    key = ssh_dir / SSH_PRIVATE_KEY_FILE
    authorized_keys = ssh_dir / _AUTHORIZED_KEYS
    for path in (key, authorized_keys):
        if not path.is_file():
            raise InvalidArgumentError("ssh_dir", f"{path} is missing; mount the job's SSH Secret")
    state_dir.mkdir(parents=True, exist_ok=True)
    config = state_dir / "sshd_config"
    config.write_text(
        sshd_config(
            private_identity(key, state_dir).absolute(),
            authorized_keys.absolute(),
            port=port,
            listen_addresses=listen_addresses,
        )
    )
    if os.geteuid() == 0:
        _PRIVILEGE_SEPARATION_DIR.mkdir(mode=0o755, exist_ok=True)
    return config


def run_sshd(config: Path) -> NoReturn:
    """Replace this process with sshd in the foreground, logging to stderr."""
    sshd = find_sshd()
    os.execv(sshd, [sshd, "-D", "-e", "-f", str(config.absolute())])


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of ``mpi-worker``."""
    parser = argparse.ArgumentParser(
        prog="mpi-worker", description="Run sshd in the foreground with the job's mounted keys."
    )
    parser.add_argument("--version", action=VersionAction)
    parser.add_argument("--ssh-dir", type=Path, default=Path.home() / ".ssh")
    parser.add_argument("--port", type=int, default=SSH_PORT)
    parser.add_argument(
        "--listen",
        action="append",
        default=[],
        metavar="ADDRESS",
        help="address to listen on (repeatable; default: all)",
    )
    parser.add_argument(
        "--state-dir",
        type=Path,
        default=None,
        help="where to write the sshd config (default: a new temporary directory)",
    )
    args = parser.parse_args(argv)
    state_dir = args.state_dir or Path(tempfile.mkdtemp(prefix="mpi-worker-"))
    try:
        config = prepare_sshd(args.ssh_dir, state_dir, port=args.port, listen_addresses=args.listen)
        run_sshd(config)
    except (InvalidArgumentError, OSError) as error:
        print(f"mpi-worker: error: {error}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
