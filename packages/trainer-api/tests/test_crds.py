"""The generated CRDs: committed copies are current, and they carry the schema rules."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from trainer_api.crds import crd_manifests, main, render

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
COMMITTED = Path(__file__).resolve().parents[1] / "manifests" / "crds"


def version_of(manifest: dict[str, Any]) -> dict[str, Any]:
    version: dict[str, Any] = manifest["spec"]["versions"][0]
    return version


def test_committed_crds_match_the_generated_ones(tmp_path: Path) -> None:
    assert main([str(tmp_path)]) == 0
    generated = sorted(path.name for path in tmp_path.iterdir())
    assert generated == sorted(path.name for path in COMMITTED.iterdir())
    for name in generated:
        assert (COMMITTED / name).read_text() == (tmp_path / name).read_text(), (
            f"{name} is stale: run `python -m trainer_api.crds packages/trainer-api/manifests/crds`"
        )


def test_train_job_crd_has_status_subresource_and_printer_columns() -> None:
    version = version_of(crd_manifests()["trainer.kubeflow.org_trainjobs.yaml"])
    assert version["subresources"] == {"status": {}}
    columns = [
        (column["name"], column["jsonPath"]) for column in version["additionalPrinterColumns"]
    ]
    assert columns == [
        ("State", ".status.conditions[-1:].type"),
        ("Age", ".metadata.creationTimestamp"),
    ]


def test_cluster_runtime_is_cluster_scoped() -> None:
    manifests = crd_manifests()
    scopes = {
        manifest["spec"]["names"]["kind"]: manifest["spec"]["scope"]
        for manifest in manifests.values()
    }
    assert scopes == {
        "TrainJob": "Namespaced",
        "TrainingRuntime": "Namespaced",
        "ClusterTrainingRuntime": "Cluster",
        "OptimizationJob": "Namespaced",
    }


def schema_at(schema: dict[str, Any], path: str) -> dict[str, Any]:
    for part in path.split("."):
        schema = schema["items"] if part == "[]" else schema["properties"][part]
    return schema


def test_rules_appear_as_cel_and_schema_keywords() -> None:
    root = version_of(crd_manifests()["trainer.kubeflow.org_trainjobs.yaml"])["schema"][
        "openAPIV3Schema"
    ]
    assert [rule["message"] for rule in root["x-kubernetes-validations"]] == [
        "metadata.name must match RFC 1035 DNS label format",
        "metadata.name must be no more than 63 characters",
    ]
    assert all("fieldPath" not in rule for rule in root["x-kubernetes-validations"]), (
        "the root schema does not declare metadata's properties, so no fieldPath into it"
    )
    trainer = schema_at(root, "spec.trainer")
    assert {"rule": "self == oldSelf", "message": "field is immutable"} in trainer[
        "x-kubernetes-validations"
    ]
    assert trainer["properties"]["numNodes"]["minimum"] == 0
    assert (
        trainer["properties"]["numProcPerNode"]["x-kubernetes-validations"][0]["rule"]
        == "self >= 1"
    )
    env = trainer["properties"]["env"]
    assert (env["maxItems"], env["x-kubernetes-list-type"], env["x-kubernetes-list-map-keys"]) == (
        128,
        "map",
        ["name"],
    )
    limits = schema_at(root, "spec.trainer.resourcesPerNode.limits")["additionalProperties"]
    assert limits["x-kubernetes-int-or-string"] is True
    assert schema_at(root, "spec.runtimeRef.kind")["default"] == "ClusterTrainingRuntime"


def test_core_types_are_typed_down_to_their_leaves() -> None:
    root = version_of(crd_manifests()["trainer.kubeflow.org_trainingruntimes.yaml"])["schema"][
        "openAPIV3Schema"
    ]
    pod = schema_at(root, "spec.template.spec.replicatedJobs.[].template.spec.template.spec")
    term = schema_at(
        pod,
        "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
        "nodeSelectorTerms.[].matchExpressions.[]",
    )
    assert term["required"] == ["key", "operator"]
    port = schema_at(pod, "containers.[].livenessProbe.httpGet.port")
    assert port["x-kubernetes-int-or-string"] is True
    assert "pattern" not in port, "a port is an IntOrString, not a quantity"
    assert "pattern" in schema_at(pod, "volumes.[].emptyDir.sizeLimit")
    metadata = schema_at(root, "spec.template.spec.replicatedJobs.[].template.metadata")
    assert sorted(metadata["properties"]) == [
        "annotations",
        "finalizers",
        "labels",
        "name",
        "namespace",
    ]


def test_rendered_yaml_has_no_anchors_and_loads_back() -> None:
    for manifest in crd_manifests().values():
        text = render(manifest)
        assert "&id" not in text
        assert yaml.load(text, Loader=LOADER) == manifest


def _integer_formats(schema: dict[str, Any], path: str = "") -> dict[str, str | None]:
    """The ``format`` of every integer property, by path (``[]`` for list items)."""
    found: dict[str, str | None] = {}
    if schema.get("type") == "integer":
        found[path] = schema.get("format")
    for name, child in (schema.get("properties") or {}).items():
        found.update(_integer_formats(child, f"{path}.{name}"))
    if isinstance(schema.get("items"), dict):
        found.update(_integer_formats(schema["items"], f"{path}[]"))
    return found


def test_integer_formats_are_upstream_formats(upstream_dir: Path) -> None:
    crds = upstream_dir / "kubeflow-trainer" / "manifests" / "base" / "crds"
    ours = crd_manifests()
    for name in (
        "trainer.kubeflow.org_trainjobs.yaml",
        "trainer.kubeflow.org_trainingruntimes.yaml",
    ):
        upstream = yaml.load((crds / name).read_text(), Loader=LOADER)
        theirs = _integer_formats(version_of(upstream)["schema"]["openAPIV3Schema"])
        mine = _integer_formats(version_of(ours[name])["schema"]["openAPIV3Schema"])
        wanted = {path: fmt for path, fmt in theirs.items() if fmt is not None}
        assert wanted and {path: mine.get(path) for path in wanted} == wanted, name
