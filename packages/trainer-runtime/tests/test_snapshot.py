"""The runtime snapshot ConfigMap: upstream's format written and read, our earlier one read."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from runtime_cases import as_job, make_job, runtime_doc
from trainer_runtime.errors import BuildError
from trainer_runtime.snapshot import from_snapshot, to_snapshot

# A snapshot as upstream's controller writes it (sigs.k8s.io/yaml of the typed runtime read from
# the API server: keys sorted, server-set metadata included).
UPSTREAM_SNAPSHOT = """apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata:
  creationTimestamp: "2025-06-15T12:00:00Z"
  generation: 1
  labels:
    trainer.kubeflow.org/framework: torch
  name: torch-distributed
  resourceVersion: "1234"
  uid: 0f7a1a3c-1111-2222-3333-444455556666
spec:
  mlPolicy:
    numNodes: 1
    torch: {}
  template:
    spec:
      replicatedJobs:
      - name: node
        template:
          metadata:
            labels:
              trainer.kubeflow.org/trainjob-ancestor-step: trainer
          spec:
            template:
              spec:
                containers:
                - command:
                  - /bin/bash
                  env:
                  - name: STARTED
                    value: "2025-01-01"
                  image: pytorch/pytorch:2.7.1-cuda12.8-cudnn9-runtime
                  name: node
"""


def _config_map(data: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"name": "alpha-runtime-snapshot"}, "data": data}


def test_snapshot_is_upstreams_format_owned_and_round_trips() -> None:
    runtime = runtime_doc("deepspeed-distributed")
    snapshot = to_snapshot(as_job(make_job()), runtime)
    assert snapshot["metadata"]["name"] == "alpha-runtime-snapshot"
    assert snapshot["metadata"]["ownerReferences"][0]["name"] == "alpha"
    assert snapshot["immutable"] is True
    assert list(snapshot["data"]) == ["runtime"]
    assert yaml.safe_load(snapshot["data"]["runtime"]) == runtime
    assert from_snapshot(snapshot) == runtime


def test_upstreams_snapshot_reads_with_strings_kept() -> None:
    runtime = from_snapshot(_config_map({"runtime": UPSTREAM_SNAPSHOT}))
    assert (runtime["kind"], runtime["metadata"]["name"]) == (
        "ClusterTrainingRuntime",
        "torch-distributed",
    )
    assert runtime["metadata"]["creationTimestamp"] == "2025-06-15T12:00:00Z"
    container = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"][
        "template"
    ]["spec"]["containers"][0]
    assert container["env"] == [{"name": "STARTED", "value": "2025-01-01"}]


def test_earlier_json_snapshot_still_reads() -> None:
    runtime = runtime_doc("torch-distributed")
    assert from_snapshot(_config_map({"runtime.json": json.dumps(runtime, indent=2)})) == runtime


@pytest.mark.parametrize(
    ("data", "message"),
    [
        pytest.param({}, "data.runtime is missing", id="no-key"),
        pytest.param(
            {"runtime": "kind: Pod"}, "data.runtime does not hold a training", id="not-a-runtime"
        ),
        pytest.param(
            {"runtime.json": '{"kind": "Pod"}'},
            "data.runtime.json does not hold a training",
            id="legacy-not-a-runtime",
        ),
        pytest.param({"runtime": "kind: [Pod"}, "data.runtime is not YAML", id="not-yaml"),
    ],
)
def test_bad_snapshot_is_a_build_error(data: dict[str, str], message: str) -> None:
    with pytest.raises(BuildError, match=message):
        from_snapshot(_config_map(data))
