import os
import stat
import subprocess
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from mpi_runtime import (
    SSH_AUTH_FILE_MODE,
    SSH_AUTH_FILES,
    SSH_SECRET_PRIVATE_KEY,
    SSH_SECRET_PUBLIC_KEY,
    generate_ssh_keypair,
    private_identity,
    ssh_secret_data,
    write_ssh_auth,
)


def test_keypair_is_ecdsa_p521_pem_with_matching_authorized_keys_line() -> None:
    keypair = generate_ssh_keypair()
    assert keypair.private_key.startswith("-----BEGIN EC PRIVATE KEY-----\n")
    private = serialization.load_pem_private_key(keypair.private_key.encode(), password=None)
    assert isinstance(private, ec.EllipticCurvePrivateKey)
    assert private.curve.name == "secp521r1"
    assert keypair.public_key.startswith("ecdsa-sha2-nistp521 ")
    assert keypair.public_key.endswith("\n") and keypair.public_key.count("\n") == 1
    public = serialization.load_ssh_public_key(keypair.public_key.encode())
    assert public.public_numbers() == private.public_key().public_numbers()  # type: ignore[union-attr]


def test_each_keypair_is_new() -> None:
    assert generate_ssh_keypair().private_key != generate_ssh_keypair().private_key


def test_secret_data_and_mounted_files(tmp_path: Path) -> None:
    keypair = generate_ssh_keypair()
    assert ssh_secret_data(keypair) == {
        SSH_SECRET_PRIVATE_KEY: keypair.private_key,
        SSH_SECRET_PUBLIC_KEY: keypair.public_key,
    }
    key_path = write_ssh_auth(tmp_path / "ssh", keypair)
    assert [name for _, name in SSH_AUTH_FILES] == ["id_rsa", "id_rsa.pub", "authorized_keys"]
    assert key_path == tmp_path / "ssh" / "id_rsa"
    assert stat.S_IMODE(key_path.stat().st_mode) == SSH_AUTH_FILE_MODE == 0o600
    assert stat.S_IMODE((tmp_path / "ssh").stat().st_mode) == 0o700
    assert (tmp_path / "ssh" / "authorized_keys").read_text() == keypair.public_key
    # ssh-keygen derives the same public key from the private file: OpenSSH reads our PEM.
    derived = subprocess.run(
        ["ssh-keygen", "-y", "-f", str(key_path)], capture_output=True, text=True, check=True
    ).stdout
    assert derived.split()[:2] == keypair.public_key.split()[:2]


def test_private_identity_keeps_a_private_key_and_copies_an_exposed_one(tmp_path: Path) -> None:
    key_path = write_ssh_auth(tmp_path / "ssh", generate_ssh_keypair())
    private_dir = tmp_path / "private"
    private_dir.mkdir()
    assert private_identity(key_path, private_dir) == key_path
    key_path.chmod(0o640)  # what a Secret mount with fsGroup gives an owner
    copy = private_identity(key_path, private_dir)
    assert copy == private_dir / "id_rsa"
    assert stat.S_IMODE(copy.stat().st_mode) == 0o600
    assert copy.read_text() == key_path.read_text()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to own a file as another user")
def test_private_identity_uses_a_group_readable_key_owned_by_someone_else(tmp_path: Path) -> None:
    key_path = write_ssh_auth(tmp_path / "ssh", generate_ssh_keypair())
    key_path.chmod(0o640)
    os.chown(key_path, 1000, 1000)
    assert private_identity(key_path, tmp_path) == key_path
