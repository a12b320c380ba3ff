"""Credentials from a kubeconfig."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from trainer_controller.operator import load_credentials


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
    assert credentials.to_connection_info().server == "https://10.0.0.1:6443"


def test_plain_http_needs_no_tls_context(tmp_path: Path) -> None:
    credentials = load_credentials(
        kubeconfig(tmp_path / "kc", {"server": "http://127.0.0.1:1"}, {})
    )
    assert credentials.ssl_context() is False and credentials.headers() == {}
