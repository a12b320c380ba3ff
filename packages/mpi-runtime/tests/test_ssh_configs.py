import subprocess
from pathlib import Path

import pytest
from mpi_runtime import InvalidArgumentError, generate_ssh_keypair, write_ssh_auth
from mpi_runtime.ssh_configs import ssh_client_config, sshd_config
from mpi_runtime.workers import find_sshd


def options(text: str) -> list[tuple[str, str]]:
    return [tuple(line.split(" ", 1)) for line in text.splitlines()]  # type: ignore[misc]


def test_sshd_config_is_key_only_on_2222_without_strict_modes() -> None:
    config = dict(options(sshd_config(Path("/k/id_rsa"), Path("/k/authorized_keys"))))
    assert config["Port"] == "2222"
    assert config["HostKey"] == "/k/id_rsa"
    assert config["AuthorizedKeysFile"] == "/k/authorized_keys"
    assert config["StrictModes"] == "no"
    assert config["PasswordAuthentication"] == "no"
    assert config["PidFile"] == "none"
    assert "ListenAddress" not in config


def test_sshd_config_listens_on_each_given_address_in_order() -> None:
    text = sshd_config(Path("/k"), Path("/a"), port=2300, listen_addresses=["127.0.0.2", "::1"])
    assert [v for k, v in options(text) if k == "ListenAddress"] == ["127.0.0.2", "::1"]
    assert dict(options(text))["Port"] == "2300"


def test_sshd_accepts_the_generated_config(tmp_path: Path) -> None:
    key = write_ssh_auth(tmp_path / "ssh", generate_ssh_keypair())
    config = tmp_path / "sshd_config"
    config.write_text(sshd_config(key, tmp_path / "ssh" / "authorized_keys", port=2222))
    result = subprocess.run(
        [find_sshd(), "-t", "-f", str(config)], capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(
    ("identity", "expected"),
    [
        pytest.param(None, None, id="image-default-identity"),
        pytest.param(Path("/s/id_rsa"), "/s/id_rsa", id="job-identity"),
    ],
)
def test_client_config_skips_host_key_checks(identity: Path | None, expected: str | None) -> None:
    config = dict(options(ssh_client_config(port=2222, identity_file=identity)))
    assert config["Host"] == "*"
    assert config["Port"] == "2222"
    assert config["StrictHostKeyChecking"] == "no"
    assert config["UserKnownHostsFile"] == "/dev/null"
    assert config.get("IdentityFile") == expected


def test_client_config_validates_by_ssh(tmp_path: Path) -> None:
    config = tmp_path / "ssh_config"
    config.write_text(
        ssh_client_config(
            port=2345,
            identity_file=tmp_path / "id_rsa",
            connection_log=tmp_path / "connections",
            set_env={"SHLVL": "1"},
        )
    )
    result = subprocess.run(
        ["ssh", "-G", "-F", str(config), "node-0"], capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "port 2345" in lines
    assert "permitlocalcommand yes" in lines
    assert f'localcommand echo %n >> "{tmp_path / "connections"}"' in lines
    assert "setenv SHLVL=1" in lines


def test_client_config_logs_connections_and_sets_session_env_only_when_asked() -> None:
    config = dict(options(ssh_client_config(port=2222)))
    assert not {"PermitLocalCommand", "LocalCommand", "SetEnv"} & config.keys()


@pytest.mark.parametrize("path", ['/tmp/a"b', "/tmp/100%"])
def test_client_config_rejects_a_connection_log_path_ssh_would_misread(path: str) -> None:
    with pytest.raises(InvalidArgumentError, match=r"^connection_log: "):
        ssh_client_config(connection_log=Path(path))


@pytest.mark.parametrize("port", [0, -1, True])
def test_configs_reject_a_bad_port(port: int) -> None:
    with pytest.raises(InvalidArgumentError, match=r"^port: "):
        ssh_client_config(port=port)
    with pytest.raises(InvalidArgumentError, match=r"^port: "):
        sshd_config(Path("/k"), Path("/a"), port=port)


def test_client_config_sets_per_host_session_env_before_the_common_one(tmp_path: Path) -> None:
    config = tmp_path / "ssh_config"
    config.write_text(
        ssh_client_config(set_env={"SHLVL": "1"}, host_env={"127.0.0.2": {"BASE": "/s/2"}})
    )

    def setenv(host: str) -> list[str]:
        result = subprocess.run(
            ["ssh", "-G", "-F", str(config), host], capture_output=True, text=True, timeout=30
        )
        return [line for line in result.stdout.splitlines() if line.startswith("setenv")]

    assert setenv("127.0.0.2") == ["setenv SHLVL=1", "setenv BASE=/s/2"]
    assert setenv("127.0.0.3") == ["setenv SHLVL=1"]


def test_client_config_refuses_session_env_values_ssh_would_split() -> None:
    with pytest.raises(InvalidArgumentError, match=r"^SetEnv BASE: "):
        ssh_client_config(host_env={"h": {"BASE": "/a b"}})
