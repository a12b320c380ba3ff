"""SSH key pairs for the launcher and workers, and the files they are mounted as.

One ECDSA P-521 key pair per job: the private key (PEM) is every pod's client identity and each
worker sshd's host key; the public key is every pod's ``authorized_keys``.

File modes that work for root and for uid 1000: the Secret is mounted with ``defaultMode: 0600``
(``SSH_AUTH_FILE_MODE``). For a non-root user (uid 1000 with ``fsGroup: 1000``) the kubelet makes
the files ``root:1000`` mode ``0640``; ssh accepts that because it only refuses a private key that
others can read when the key is owned by the user. For root without ``fsGroup`` the files are
``root:root 0600``. Where a key is owned by the current user and readable by others (root with an
``fsGroup``), ``private_identity`` copies it to a ``0600`` file that ssh and sshd accept.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Final, NamedTuple

__all__ = [
    "SSH_AUTH_FILES",
    "SSH_AUTH_FILE_MODE",
    "SSH_PRIVATE_KEY_FILE",
    "SSH_SECRET_PRIVATE_KEY",
    "SSH_SECRET_PUBLIC_KEY",
    "SSHKeyPair",
    "generate_ssh_keypair",
    "private_identity",
    "ssh_secret_data",
    "write_ssh_auth",
]

SSH_SECRET_PRIVATE_KEY: Final = "ssh-privatekey"
"""Secret key of the private key (the ``kubernetes.io/ssh-auth`` Secret type's key)."""
SSH_SECRET_PUBLIC_KEY: Final = "ssh-publickey"
"""Secret key of the public key."""
SSH_PRIVATE_KEY_FILE: Final = "id_rsa"
"""File name of the private key in the mounted directory (ssh's default identity name)."""
SSH_AUTH_FILES: Final[tuple[tuple[str, str], ...]] = (
    (SSH_SECRET_PRIVATE_KEY, SSH_PRIVATE_KEY_FILE),
    (SSH_SECRET_PUBLIC_KEY, SSH_PRIVATE_KEY_FILE + ".pub"),
    (SSH_SECRET_PUBLIC_KEY, "authorized_keys"),
)
"""(Secret key, file name) pairs, in order: the Secret volume's ``items``."""
SSH_AUTH_FILE_MODE: Final = 0o600
"""The Secret volume's ``defaultMode``."""
_PUBLIC_FILE_MODE: Final = 0o644


class SSHKeyPair(NamedTuple):
    """A key pair as file contents: ``private_key`` PEM, ``public_key`` one authorized_keys line."""

    private_key: str
    public_key: str


def generate_ssh_keypair() -> SSHKeyPair:
    """A new random ECDSA P-521 key pair."""
    # Imported here: mpi-launch imports this package on every job start and never makes keys.
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP521R1())
    private_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    public_line = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    return SSHKeyPair(
        private_key=private_pem.decode("ascii"), public_key=public_line.decode() + "\n"
    )


def ssh_secret_data(keypair: SSHKeyPair) -> dict[str, str]:
    """The Secret's ``stringData``: private key first, then public key."""
    return {SSH_SECRET_PRIVATE_KEY: keypair.private_key, SSH_SECRET_PUBLIC_KEY: keypair.public_key}


def write_ssh_auth(directory: Path, keypair: SSHKeyPair) -> Path:
    """Write the files of ``SSH_AUTH_FILES`` into ``directory`` (mode 0700) as a Secret mount would.

    The private key gets ``SSH_AUTH_FILE_MODE``, public files 0644. Returns the private key path.
    """
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o700)
    contents = ssh_secret_data(keypair)
    for secret_key, name in SSH_AUTH_FILES:
        path = directory / name
        private = secret_key == SSH_SECRET_PRIVATE_KEY
        path.write_text(contents[secret_key])
        path.chmod(SSH_AUTH_FILE_MODE if private else _PUBLIC_FILE_MODE)
    return directory / SSH_PRIVATE_KEY_FILE


def private_identity(key_path: Path, private_dir: Path) -> Path:
    """A path to ``key_path``'s key that ssh and sshd accept for the current user.

    ``key_path`` itself when it is not ours or nobody else can read it; otherwise a 0600 copy in
    ``private_dir`` (a directory the caller owns and removes).
    """
    info = key_path.stat()
    if info.st_uid != os.geteuid() or not info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        return key_path
    copy = private_dir / key_path.name
    copy.touch(mode=0o600, exist_ok=False)
    copy.chmod(0o600)  # whatever the umask
    copy.write_bytes(key_path.read_bytes())
    return copy
