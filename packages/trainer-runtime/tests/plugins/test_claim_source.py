"""ClaimSource plugin: an initializer's ``pvc://CLAIM/PATH`` mounts the claim read-only in that
initializer's pod and points its STORAGE_URI at the path there; bad URIs are refused naming the
field."""

from __future__ import annotations

from typing import Any

import pytest
from runtime_cases import (
    by_kind,
    container_of,
    env_of,
    field_errors,
    make_job,
    render_of,
    runtime_doc,
)
from trainer_runtime.plugins import claim_source


def job_reading(model: str, dataset: str = "hf://org/data") -> dict[str, Any]:
    job = make_job(runtime="trl-cpu")
    job["spec"]["initializer"] = {
        "model": {"storageUri": model},
        "dataset": {"storageUri": dataset},
    }
    return job


def pod_of(jobset: dict[str, Any], name: str) -> dict[str, Any]:
    job = next(j for j in jobset["spec"]["replicatedJobs"] if j["name"] == name)
    pod: dict[str, Any] = job["template"]["spec"]["template"]["spec"]
    return pod


def test_a_claim_source_is_mounted_read_only_in_its_initializer_only() -> None:
    jobset = by_kind(
        render_of(job_reading("pvc://models/llama/3b/"), runtime_doc("trl-cpu")), "JobSet"
    )[0]
    assert pod_of(jobset, "model-initializer")["volumes"] == [
        {"name": "source", "persistentVolumeClaim": {"claimName": "models", "readOnly": True}}
    ]
    model = container_of(jobset, "model-initializer", "model-initializer")
    assert {"name": "source", "mountPath": "/mnt/source", "readOnly": True} in model["volumeMounts"]
    assert env_of(model)["STORAGE_URI"] == "/mnt/source/llama/3b"
    dataset = container_of(jobset, "dataset-initializer", "dataset-initializer")
    assert env_of(dataset)["STORAGE_URI"] == "hf://org/data"
    assert "volumes" not in pod_of(jobset, "dataset-initializer")
    assert "volumes" not in pod_of(jobset, "node")


def test_a_whole_claim_is_its_mount_path() -> None:
    jobset = by_kind(
        render_of(job_reading("hf://org/m", "pvc://data"), runtime_doc("trl-cpu")), "JobSet"
    )[0]
    dataset = container_of(jobset, "dataset-initializer", "dataset-initializer")
    assert env_of(dataset)["STORAGE_URI"] == "/mnt/source"


@pytest.mark.parametrize(
    "uri", ["pvc://Models/m", "pvc://models/../etc", "pvc:///m", "pvc://a_b/m"]
)
def test_a_bad_claim_uri_is_refused_naming_the_field(uri: str) -> None:
    assert field_errors(job_reading(uri), runtime_doc("trl-cpu")) == [
        "spec.initializer.model.storageUri: expected pvc://CLAIM/PATH (CLAIM a "
        "PersistentVolumeClaim name, PATH relative without '..'), got " + repr(uri)
    ]


def test_claim_and_path() -> None:
    assert claim_source.claim_and_path("pvc://c/a//b/") == ("c", "a/b")
    assert claim_source.claim_and_path("pvc://c") == ("c", "")
    assert claim_source.claim_and_path("hf://c/a") is None
