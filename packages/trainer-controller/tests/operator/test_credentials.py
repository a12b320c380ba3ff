"""Credentials from a kubeconfig."""

from __future__ import annotations

from pathlib import Path

import yaml
from trainer_controller.operator import load_credentials


def test_kubeconfig_server_token_and_namespace(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "c",
                "clusters": [
                    {
                        "name": "k",
                        "cluster": {
                            "server": "https://10.0.0.1:6443",
                            "insecure-skip-tls-verify": True,
                        },
                    }
                ],
                "users": [{"name": "u", "user": {"token": "secret-token"}}],
                "contexts": [
                    {"name": "c", "context": {"cluster": "k", "user": "u", "namespace": "team"}}
                ],
            }
        )
    )
    credentials = load_credentials(str(path))
    assert (
        credentials.server,
        credentials.token,
        credentials.default_namespace,
        credentials.insecure,
    ) == ("https://10.0.0.1:6443", "secret-token", "team", True)
    assert credentials.headers() == {"Authorization": "Bearer secret-token"}
    assert credentials.to_connection_info().server == "https://10.0.0.1:6443"


def test_plain_http_needs_no_tls_context(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "c",
                "clusters": [{"name": "k", "cluster": {"server": "http://127.0.0.1:1"}}],
                "users": [{"name": "u", "user": {}}],
                "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
            }
        )
    )
    credentials = load_credentials(str(path))
    assert credentials.ssl_context() is False and credentials.headers() == {}
