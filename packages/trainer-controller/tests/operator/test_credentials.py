"""Credentials from a kubeconfig."""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from trainer_controller.operator import Credentials, CredentialsError, load_credentials


def kubeconfig(path: Path, cluster: dict[str, Any], user: dict[str, Any], **context: str) -> str:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "c",
                "clusters": [{"name": "k", "cluster": cluster}],
                "users": [{"name": "u", "user": user}],
                "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u", **context}}],
            }
        )
    )
    return str(path)


def test_kubeconfig_server_token_and_namespace(tmp_path: Path) -> None:
    cluster = {"server": "https://10.0.0.1:6443", "insecure-skip-tls-verify": True}
    credentials = load_credentials(
        kubeconfig(tmp_path / "kc", cluster, {"token": "secret"}, namespace="team")
    )
    assert (
        credentials.server,
        credentials.token,
        credentials.default_namespace,
        credentials.insecure,
    ) == ("https://10.0.0.1:6443", "secret", "team", True)
    assert credentials.headers() == {"Authorization": "Bearer secret"}


def test_plain_http_needs_no_tls_context(tmp_path: Path) -> None:
    credentials = load_credentials(
        kubeconfig(tmp_path / "kc", {"server": "http://127.0.0.1:1"}, {})
    )
    assert credentials.ssl_context() is False and credentials.headers() == {}


def test_embedded_certificates_become_private_files(tmp_path: Path) -> None:
    ca, cert, key = b"CA PEM", b"CERT PEM", b"KEY PEM"
    cluster = {
        "server": "https://k:6443",
        "certificate-authority-data": base64.b64encode(ca).decode(),
    }
    user = {
        "client-certificate-data": base64.b64encode(cert).decode(),
        "client-key-data": base64.b64encode(key).decode(),
    }
    credentials = load_credentials(kubeconfig(tmp_path / "kc", cluster, user))
    files = (credentials.ca_path, credentials.certificate_path, credentials.private_key_path)
    assert [Path(str(file)).read_bytes() for file in files] == [ca, cert, key]
    assert {Path(str(file)).stat().st_mode & 0o777 for file in files} == {0o600}
    assert credentials.headers() == {}


def test_file_paths_are_relative_to_the_kubeconfig(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("from-file\n")
    cluster = {"server": "https://k:6443", "certificate-authority": "ca.crt"}
    user = {"tokenFile": "token", "client-certificate": "/abs/c.crt"}
    credentials = load_credentials(kubeconfig(tmp_path / "kc", cluster, user))
    assert (credentials.ca_path, credentials.certificate_path, credentials.token) == (
        str(tmp_path / "ca.crt"),
        "/abs/c.crt",
        "from-file",
    )


def test_basic_auth_header(tmp_path: Path) -> None:
    user = {"username": "admin", "password": "pw"}
    credentials = load_credentials(kubeconfig(tmp_path / "kc", {"server": "https://k"}, user))
    assert credentials.headers() == {"Authorization": "Basic YWRtaW46cHc="}


def test_in_cluster_service_account(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("sa-token")
    (tmp_path / "namespace").write_text("kubeflow-system")
    credentials = load_credentials(
        environ={"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"},
        home=tmp_path / "no-home",
        service_account=tmp_path,
    )
    assert credentials == Credentials(
        server="https://[fd00::1]:443",
        token="sa-token",
        ca_path=str(tmp_path / "ca.crt"),
        default_namespace="kubeflow-system",
    )


def test_a_kubeconfig_is_preferred_to_the_service_account_as_kubectl_does(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("sa-token")
    path = kubeconfig(tmp_path / "kc", {"server": "http://127.0.0.1:1"}, {})
    credentials = load_credentials(
        environ={"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBECONFIG": path},
        service_account=tmp_path,
    )
    assert credentials.server == "http://127.0.0.1:1"


def test_kubeconfig_from_the_environment(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path / "kc", {"server": "http://127.0.0.1:1"}, {})
    missing = str(tmp_path / "missing")
    credentials = load_credentials(environ={"KUBECONFIG": f"{missing}:{path}"})
    assert credentials.server == "http://127.0.0.1:1"


@pytest.mark.parametrize(
    ("document", "message"),
    [
        pytest.param(None, "no cluster to connect to: no kubeconfig at", id="nothing"),
        pytest.param("[]", "expected a mapping, got []", id="not-a-mapping"),
        pytest.param("kind: Config\n", "current-context is not set", id="no-context"),
        pytest.param(
            "current-context: c\ncontexts: []\n", "contexts: no entry named 'c'", id="no-entry"
        ),
        pytest.param(
            yaml.safe_dump(
                {
                    "current-context": "c",
                    "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
                    "clusters": [{"name": "k", "cluster": {"server": "https://k"}}],
                    "users": [{"name": "u", "user": {"exec": {"command": "aws"}}}],
                }
            ),
            "user 'u' logs in with 'exec', which trainer-controller does not run",
            id="exec-plugin",
        ),
    ],
)
def test_errors_say_what_is_wrong(tmp_path: Path, document: str | None, message: str) -> None:
    path = tmp_path / "config"
    if document is not None:
        path.write_text(document)
    with pytest.raises(CredentialsError, match=re.escape(message)):
        load_credentials(environ={"KUBECONFIG": str(path)})
