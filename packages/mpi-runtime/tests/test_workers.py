from pathlib import Path

import pytest
from mpi_runtime import InvalidArgumentError, generate_ssh_keypair, prepare_sshd, write_ssh_auth


def test_prepare_sshd_points_at_the_mounted_keys(tmp_path: Path) -> None:
    key = write_ssh_auth(tmp_path / "ssh", generate_ssh_keypair())
    config = prepare_sshd(tmp_path / "ssh", tmp_path / "state", port=2345, listen_addresses=["::1"])
    options = dict(line.split(" ", 1) for line in config.read_text().splitlines())
    assert options["HostKey"] == str(key.absolute())
    assert options["AuthorizedKeysFile"] == str((tmp_path / "ssh" / "authorized_keys").absolute())
    assert options["Port"] == "2345" and options["ListenAddress"] == "::1"


def test_prepare_sshd_uses_a_private_copy_of_an_exposed_host_key(tmp_path: Path) -> None:
    key = write_ssh_auth(tmp_path / "ssh", generate_ssh_keypair())
    key.chmod(0o640)
    config = prepare_sshd(tmp_path / "ssh", tmp_path / "state")
    options = dict(line.split(" ", 1) for line in config.read_text().splitlines())
    assert options["HostKey"] == str((tmp_path / "state" / "id_rsa").absolute())


def test_prepare_sshd_says_which_key_file_is_missing(tmp_path: Path) -> None:
    (tmp_path / "ssh").mkdir()
    with pytest.raises(InvalidArgumentError, match=r"^ssh_dir: .*id_rsa is missing"):
        prepare_sshd(tmp_path / "ssh", tmp_path / "state")
