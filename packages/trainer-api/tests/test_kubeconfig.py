"""Finding the cluster in kubectl's order: --kubeconfig, $KUBECONFIG merged, ~/.kube/config,
in-cluster (one rule for the SDK and the controller)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from trainer_api.kubeconfig import InCluster, Kubeconfig, KubeconfigError, find_connection


def write(path: Path, current: str | None, **contexts: dict[str, Any]) -> Path:
    """A kubeconfig whose context NAME uses cluster NAME at https://NAME."""
    document: dict[str, Any] = {
        "clusters": [
            {"name": name, "cluster": {"server": f"https://{name}", **context.pop("cluster", {})}}
            for name, context in contexts.items()
        ],
        "users": [{"name": name, "user": {"tokenFile": "token"}} for name in contexts],
        "contexts": [
            {"name": name, "context": {"cluster": name, "user": name, **context}}
            for name, context in contexts.items()
        ],
    }
    if current:
        document["current-context"] = current
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(document))
    return path


@pytest.fixture
def service_account(tmp_path: Path) -> Path:
    account = tmp_path / "serviceaccount"
    account.mkdir()
    (account / "token").write_text("sa")
    (account / "namespace").write_text("kubeflow-system")
    return account


IN_CLUSTER_ENV = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}


def server(found: Kubeconfig | InCluster | None) -> str:
    assert isinstance(found, Kubeconfig), found
    return str(found.cluster()["server"])


def test_an_explicit_kubeconfig_beats_everything(tmp_path: Path, service_account: Path) -> None:
    explicit = write(tmp_path / "explicit", "a", a={})
    listed = write(tmp_path / "listed", "b", b={})
    write(tmp_path / "home" / ".kube" / "config", "c", c={})
    found = find_connection(
        explicit,
        environ={**IN_CLUSTER_ENV, "KUBECONFIG": str(listed)},
        home=tmp_path / "home",
        service_account=service_account,
    )
    assert server(found) == "https://a"


def test_a_missing_explicit_kubeconfig_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(KubeconfigError, match="no such file"):
        find_connection(tmp_path / "missing", environ={}, home=tmp_path)


def test_kubeconfig_files_merge_first_wins(tmp_path: Path) -> None:
    first = write(tmp_path / "one" / "config", None, shared={"namespace": "first"})
    second = write(
        tmp_path / "two" / "config",
        "shared",
        shared={"namespace": "second"},
        extra={"cluster": {"certificate-authority": "ca.crt"}},
    )
    paths = os.pathsep.join([str(tmp_path / "absent"), str(first), str(second)])
    found = find_connection(environ={"KUBECONFIG": paths}, home=tmp_path)
    assert isinstance(found, Kubeconfig)
    assert found.files == (first, second), "missing files are skipped"
    assert found.context_name == "shared", "the first current-context set wins"
    assert found.namespace == "first", "the first file to name a context wins it"
    assert found.user()["tokenFile"] == str(tmp_path / "one" / "token")
    assert found.entry("clusters", "extra")["certificate-authority"] == str(
        tmp_path / "two" / "ca.crt"
    ), "paths are relative to the file that holds them"
    chosen = find_connection(context="extra", environ={"KUBECONFIG": paths}, home=tmp_path)
    assert server(chosen) == "https://extra"


def test_kubeconfig_set_means_home_is_not_read(tmp_path: Path) -> None:
    write(tmp_path / ".kube" / "config", "home", home={})
    listed = write(tmp_path / "listed", "listed", listed={})
    assert server(find_connection(environ={"KUBECONFIG": str(listed)}, home=tmp_path)) == (
        "https://listed"
    )
    assert server(find_connection(environ={"KUBECONFIG": ""}, home=tmp_path)) == "https://home"


def test_a_kubeconfig_beats_the_in_cluster_service_account(
    tmp_path: Path, service_account: Path
) -> None:
    write(tmp_path / ".kube" / "config", "home", home={})
    found = find_connection(environ=IN_CLUSTER_ENV, home=tmp_path, service_account=service_account)
    assert server(found) == "https://home"


def test_in_cluster_comes_last(tmp_path: Path, service_account: Path) -> None:
    environ = {**IN_CLUSTER_ENV, "KUBECONFIG": str(tmp_path / "absent")}
    found = find_connection(environ=environ, home=tmp_path, service_account=service_account)
    assert found == InCluster(
        server="https://10.0.0.1:443",
        token_file=service_account / "token",
        ca_file=service_account / "ca.crt",
        namespace="kubeflow-system",
    )
    assert find_connection(environ={}, home=tmp_path, service_account=service_account) is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("[]", "expected a mapping", id="not-a-mapping"),
        pytest.param("kind: Config\n", "current-context is not set", id="no-context"),
        pytest.param("current-context: c\n", "contexts: no entry named 'c'", id="no-entry"),
        pytest.param("clusters: {}\ncurrent-context: c\n", "clusters: expected a list", id="map"),
        pytest.param("a: [\n", "cannot read it", id="bad-yaml"),
    ],
)
def test_bad_kubeconfigs_name_the_file_and_field(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "config"
    path.write_text(text)
    with pytest.raises(KubeconfigError, match=message) as raised:
        find_connection(path, environ={}, home=tmp_path)
    assert str(path) in str(raised.value)
