"""Every kustomize overlay builds offline and every object it yields is valid.

Built-in Kubernetes kinds are validated against the OpenAPI schemas of each supported Kubernetes
version (kubernetes-validate, strict: unknown fields fail); the trainer.kubeflow.org objects with
trainer_api's own validation; cert-manager objects only by shape (no schema is available offline).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest
import trainer_api
import yaml
from trainer_controller.operator import load_config
from trainer_controller.operator.webhooks import WEBHOOK_PATHS
from trainer_runtime import builtin_runtimes

PACKAGE: Final = Path(__file__).resolve().parents[2]
MANIFESTS: Final = PACKAGE / "manifests"
# What an admin applies: an overlay (the controller and its CRDs), then the built-in runtimes.
TARGETS: Final = (
    *sorted(
        f"overlays/{path.name}" for path in (MANIFESTS / "overlays").iterdir() if path.is_dir()
    ),
    "runtimes",
)
OVERLAYS: Final = tuple(target for target in TARGETS if target.startswith("overlays/"))
SUPPORTED_KUBERNETES: Final = ("1.31.0", "1.32.0", "1.33.0", "1.34.0", "1.35.0", "1.36.0", "1.37.0")

kubernetes_validate = pytest.importorskip(
    "kubernetes_validate", reason="kubernetes-validate is not installed"
)
needs_kubectl = pytest.mark.skipif(
    shutil.which("kubectl") is None, reason="kubectl is not installed"
)


def build(target: str) -> list[dict[str, Any]]:
    result = subprocess.run(
        ["kubectl", "kustomize", str(MANIFESTS / target)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def label(obj: dict[str, Any]) -> str:
    return f"{obj['kind']}/{obj['metadata']['name']}"


@pytest.fixture(scope="module")
def built() -> dict[str, list[dict[str, Any]]]:
    """Every target's objects, built once for the module."""
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not installed")
    return {target: build(target) for target in TARGETS}


@pytest.fixture(params=OVERLAYS)
def objects(
    request: pytest.FixtureRequest, built: dict[str, list[dict[str, Any]]]
) -> list[dict[str, Any]]:
    return built[request.param]


def unique(built: dict[str, list[dict[str, Any]]]) -> Iterator[dict[str, Any]]:
    """Each distinct object once, whichever overlays share it (schema validation is slow)."""
    seen: set[str] = set()
    for objects in built.values():
        for obj in objects:
            key = json.dumps(obj, sort_keys=True)
            if key not in seen:
                seen.add(key)
                yield obj


def test_overlays_exist() -> None:
    assert OVERLAYS == ("overlays/cert-manager", "overlays/standalone")


@needs_kubectl
def test_every_object_is_valid_for_every_supported_version(
    built: dict[str, list[dict[str, Any]]],
) -> None:
    problems = []
    for obj in unique(built):
        group = obj["apiVersion"].split("/")[0] if "/" in obj["apiVersion"] else ""
        if group == "trainer.kubeflow.org":
            problems += [
                f"{label(obj)}: {error}"
                for error in trainer_api.validate(
                    trainer_api.apply_defaults(trainer_api.parse(obj, strict=True))
                )
            ]
        elif group == "cert-manager.io":
            assert obj["kind"] in ("Issuer", "Certificate") and obj["spec"], label(obj)
        else:
            for version in SUPPORTED_KUBERNETES:
                try:
                    kubernetes_validate.validate(obj, version, strict=True)
                except kubernetes_validate.ValidationError as error:
                    problems.append(
                        f"{label(obj)} on {version}: {error.message} at {list(error.path)}"
                    )
    assert problems == []


@needs_kubectl
def test_deployment_is_hardened(objects: list[dict[str, Any]]) -> None:
    deployment = next(obj for obj in objects if obj["kind"] == "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]
    assert container["resources"]["requests"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert deployment["spec"]["replicas"] >= 2


@needs_kubectl
def test_rbac_has_no_wildcards(objects: list[dict[str, Any]]) -> None:
    rules = [
        rule for obj in objects if obj["kind"] in ("ClusterRole", "Role") for rule in obj["rules"]
    ]
    assert rules
    for rule in rules:
        for field in ("apiGroups", "resources", "verbs"):
            assert "*" not in rule[field], rule
        assert not {"escalate", "bind", "impersonate"} & set(rule["verbs"]), rule


@needs_kubectl
def test_webhook_paths_are_the_ones_served(objects: list[dict[str, Any]]) -> None:
    paths = {
        hook["clientConfig"]["service"]["path"]
        for obj in objects
        if obj["kind"].endswith("WebhookConfiguration")
        for hook in obj["webhooks"]
    }
    assert paths == set(WEBHOOK_PATHS.values())


@needs_kubectl
def test_runtimes_are_every_builtin_runtime(built: dict[str, list[dict[str, Any]]]) -> None:
    names = [
        obj["metadata"]["name"]
        for obj in built["runtimes"]
        if obj["kind"] == "ClusterTrainingRuntime"
    ]
    assert sorted(names) == sorted(builtin_runtimes())


@needs_kubectl
def test_overlay_ships_the_crds(objects: list[dict[str, Any]]) -> None:
    kinds = {(obj["kind"], obj["metadata"]["name"]) for obj in objects}
    crds = {name for kind, name in kinds if kind == "CustomResourceDefinition"}
    assert crds == {
        "trainjobs.trainer.kubeflow.org",
        "trainingruntimes.trainer.kubeflow.org",
        "clustertrainingruntimes.trainer.kubeflow.org",
        "optimizationjobs.trainer.kubeflow.org",
    }


def test_runtime_kustomization_lists_every_runtime_file() -> None:
    folder = PACKAGE.parent / "trainer-runtime" / "src" / "trainer_runtime" / "runtimes"
    listed = yaml.safe_load((folder / "Kustomization").read_text())["resources"]
    assert listed == sorted(path.name for path in folder.glob("*.yaml"))


def test_shipped_config_file_loads() -> None:
    config = load_config(MANIFESTS / "base" / "config.yaml")
    assert (config.lease_namespace, config.service_namespace) == (
        "kubeflow-system",
        "kubeflow-system",
    )
