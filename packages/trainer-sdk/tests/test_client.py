"""TrainerClient's backend choice: Kubernetes with a kubeconfig or in a cluster, else local."""

from __future__ import annotations

from pathlib import Path

import pytest
from trainer_sdk import (
    ContainerBackendConfig,
    KubernetesBackendConfig,
    LocalBackendConfig,
    TrainerClient,
)
from trainer_sdk.client import select_backend_config


@pytest.fixture
def no_cluster(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    return tmp_path


def test_without_a_cluster_the_local_backend_is_chosen(no_cluster: Path) -> None:
    assert isinstance(select_backend_config(), LocalBackendConfig)


def test_a_kubeconfig_selects_kubernetes(no_cluster: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kubeconfig = no_cluster / "config"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    assert isinstance(select_backend_config(), KubernetesBackendConfig)


def test_kubeconfig_set_means_home_is_not_read_as_kubectl_does(
    no_cluster: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (no_cluster / ".kube").mkdir()
    (no_cluster / ".kube" / "config").write_text("current-context: c\ncontexts: []\n")
    monkeypatch.setenv("KUBECONFIG", str(no_cluster / "missing"))
    assert isinstance(select_backend_config(), LocalBackendConfig)


def test_an_unknown_config_is_rejected() -> None:
    with pytest.raises(ValueError, match="backend_config: expected KubernetesBackendConfig"):
        TrainerClient(backend_config="local")  # type: ignore[arg-type]


def test_the_container_backend_is_refused_with_the_reason() -> None:
    with pytest.raises(NotImplementedError, match="container \\(Docker/Podman\\) backend"):
        TrainerClient(ContainerBackendConfig(container_runtime="docker"))
