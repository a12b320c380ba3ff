"""The optional UI (manifests/ui): valid objects, read-only RBAC unless delete is enabled, a
hardened pod that listens on loopback only."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any, Final

import pytest
import yaml

UI: Final = Path(__file__).resolve().parents[2] / "manifests" / "ui"
READ: Final = {"get", "list", "watch"}
# The oldest and the newest Kubernetes the controller's manifests are validated for.
VERSIONS: Final = ("1.31.0", "1.37.0")

kubernetes_validate = pytest.importorskip("kubernetes_validate", reason="needs kubernetes-validate")
pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl")


def build(target: str) -> list[dict[str, Any]]:
    result = subprocess.run(
        ["kubectl", "kustomize", str(UI / target)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def one(objects: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    [found] = [obj for obj in objects if obj["kind"] == kind]
    return found


def grants(objects: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    """Every (group, resource, verb) the UI's ClusterRole grants."""
    return {
        (group, resource, verb)
        for rule in one(objects, "ClusterRole")["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


@pytest.mark.parametrize("target", ["base", "allow-delete"])
def test_every_object_is_valid(target: str) -> None:
    for obj in build(target):
        for version in VERSIONS:
            kubernetes_validate.validate(obj, version, strict=True)


def test_the_ui_reads_what_it_shows_and_writes_nothing() -> None:
    objects = build("base")
    granted = grants(objects)
    assert {verb for _, _, verb in granted} == READ
    assert {(group, resource) for group, resource, _ in granted} == {
        ("trainer.kubeflow.org", "trainjobs"),
        ("trainer.kubeflow.org", "trainingruntimes"),
        ("trainer.kubeflow.org", "clustertrainingruntimes"),
        ("jobset.x-k8s.io", "jobsets"),
        ("", "pods"),
        ("", "pods/log"),
        ("", "events"),
    }
    binding = one(objects, "ClusterRoleBinding")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "trainer-ui", "namespace": "kubeflow-system"}
    ]
    container = one(objects, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert {"name": "TRAINER_UI_READ_ONLY", "value": "true"} in container["env"]


def test_allow_delete_adds_only_deleting_trainjobs() -> None:
    added = grants(build("allow-delete")) - grants(build("base"))
    assert added == {("trainer.kubeflow.org", "trainjobs", "delete")}
    deployment = one(build("allow-delete"), "Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert {"name": "TRAINER_UI_READ_ONLY", "value": "false"} in container["env"]


def test_the_pod_is_hardened_and_listens_on_loopback_only() -> None:
    deployment = one(build("base"), "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert pod["serviceAccountName"] == "trainer-ui"
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]
    args = container["args"]
    assert args[args.index("--host") + 1] == "127.0.0.1"
    assert "Service" not in {obj["kind"] for obj in build("base")}


def test_the_metric_history_is_kept_on_a_claim_by_one_pod() -> None:
    objects = build("base")
    claim = one(objects, "PersistentVolumeClaim")
    deployment = one(objects, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    history = {item["name"]: item["value"] for item in container["env"]}["TRAINER_UI_HISTORY"]
    [volume] = [v for v in pod["volumes"] if "persistentVolumeClaim" in v]
    assert volume["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]
    [mount] = [m for m in container["volumeMounts"] if m["name"] == volume["name"]]
    assert str(Path(history).parent) == mount["mountPath"]  # the file lives on the claim
    assert claim["spec"]["accessModes"] == ["ReadWriteOnce"]
    # One writer: never two pods on the claim, and the UI's user may write it.
    assert deployment["spec"]["replicas"] == 1
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    assert pod["securityContext"]["fsGroup"] == pod["securityContext"]["runAsGroup"]
