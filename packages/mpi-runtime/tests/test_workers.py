import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from mpi_runtime import (
    InvalidArgumentError,
    find_sshd,
    generate_ssh_keypair,
    prepare_sshd,
    private_identity,
    ssh_client_config,
    sshd_config,
    wait_for_hosts,
    write_ssh_auth,
)
from mpi_runtime.workers import main


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


@pytest.fixture
def secret_mount() -> Iterator[Path]:
    """The job's keys as a Secret volume with defaultMode 0600 and fsGroup 1000 leaves them:
    root:1000, files 0640, in a directory uid 1000 can reach."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to act as uid 1000")
    try:
        pwd.getpwuid(1000)
    except KeyError:
        pytest.skip("no user with uid 1000 on this machine")
    base = Path(tempfile.mkdtemp(prefix="mpi-runtime-uid1000-"))
    base.chmod(0o755)
    ssh_dir = base / "ssh"
    write_ssh_auth(ssh_dir, generate_ssh_keypair())
    for path in [ssh_dir, *ssh_dir.iterdir()]:
        os.chown(path, 0, 1000)
        path.chmod(0o750 if path.is_dir() else 0o640)
    try:
        yield ssh_dir
    finally:
        shutil.rmtree(base)


def as_uid_1000(*argv: str) -> list[str]:
    return ["setpriv", "--reuid", "1000", "--regid", "1000", "--clear-groups", *argv]


@pytest.mark.e2e
def test_secret_mount_modes_work_for_uid_1000_and_for_root(secret_mount: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.4", 0))
        port = probe.getsockname()[1]
    config = secret_mount.parent / "sshd_config"
    # What prepare_sshd writes when run as uid 1000: the key is root's, so it is used in place.
    config.write_text(
        sshd_config(
            secret_mount / "id_rsa",
            secret_mount / "authorized_keys",
            port=port,
            listen_addresses=["127.0.0.4"],
        )
    )
    sshd = subprocess.Popen(
        as_uid_1000(find_sshd(), "-D", "-e", "-f", str(config)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_hosts(["127.0.0.4"], port, 20.0)
        user = pwd.getpwuid(1000).pw_name

        def ssh(identity: Path, *prefix: str) -> subprocess.CompletedProcess[str]:
            client = secret_mount.parent / f"client-{identity.parent.name}"
            client.write_text(ssh_client_config(port=port, identity_file=identity))
            client.chmod(0o644)
            argv = [*prefix, "env", f"HOME={secret_mount.parent}", "ssh", "-F", str(client)]
            return subprocess.run(
                [*argv, "-l", user, "127.0.0.4", "id -u"],
                capture_output=True,
                text=True,
                timeout=60,
            )

        as_user = ssh(secret_mount / "id_rsa", *as_uid_1000())
        assert (as_user.returncode, as_user.stdout.strip()) == (0, "1000"), as_user.stderr
        as_root = ssh(secret_mount / "id_rsa")
        assert as_root.returncode != 0 and "UNPROTECTED PRIVATE KEY FILE" in as_root.stderr
        private_dir = secret_mount.parent / "private"
        private_dir.mkdir(mode=0o700)
        copied = private_identity(secret_mount / "id_rsa", private_dir)
        assert copied != secret_mount / "id_rsa"
        as_root = ssh(copied)
        assert (as_root.returncode, as_root.stdout.strip()) == (0, "1000"), as_root.stderr
    finally:
        sshd.terminate()
        sshd.wait(timeout=10)


def test_worker_cli_exits_1_naming_the_missing_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "ssh").mkdir()
    with pytest.raises(SystemExit) as exited:
        main(["--ssh-dir", str(tmp_path / "ssh"), "--state-dir", str(tmp_path / "state")])
    assert exited.value.code == 1
    assert capsys.readouterr().err.startswith("mpi-worker: error: ssh_dir: ")
