"""Mapping owned-object events back to their TrainJob; a TrainJob to its runtime, whose path
only ever holds a name that stays in the runtimes collection."""

from __future__ import annotations

from typing import Any

import pytest
from trainer_controller.operator.watching import owner_keys, runtime_path


def owned(*references: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"namespace": "ns", "ownerReferences": list(references)}}


@pytest.mark.parametrize(
    ("body", "keys"),
    [
        pytest.param(
            owned({"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": "j"}),
            [("ns", "j")],
            id="trainjob-owner",
        ),
        pytest.param(
            owned({"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}),
            [],
            id="other-owner",
        ),
        pytest.param(
            owned({"apiVersion": "example.com/v1", "kind": "TrainJob", "name": "j"}),
            [],
            id="other-group",
        ),
        pytest.param({"metadata": {"namespace": "ns"}}, [], id="no-owner"),
    ],
)
def test_owner_keys(body: dict[str, Any], keys: list[tuple[str, str]]) -> None:
    assert list(owner_keys(body)) == keys


RUNTIMES = "/apis/trainer.kubeflow.org/v1alpha1"


def job(ref: Any) -> dict[str, Any]:
    return {"spec": {"runtimeRef": ref}}


@pytest.mark.parametrize(
    ("obj", "namespace", "path"),
    [
        pytest.param(
            job({"name": "torch"}), "ns", f"{RUNTIMES}/clustertrainingruntimes/torch", id="cluster"
        ),
        pytest.param(
            job({"name": "t", "kind": "TrainingRuntime"}),
            "ns",
            f"{RUNTIMES}/namespaces/ns/trainingruntimes/t",
            id="namespaced",
        ),
        pytest.param(job({"name": "../../../api/v1/secrets/x"}), "ns", None, id="path-in-name"),
        pytest.param(job({"name": "a?watch=1"}), "ns", None, id="query-in-name"),
        pytest.param(job({"name": "t", "kind": "TrainingRuntime"}), "../x", None, id="bad-ns"),
        pytest.param(job({"name": "t", "kind": "Secret"}), "ns", None, id="other-kind"),
        pytest.param(job("torch"), "ns", None, id="ref-string"),
        pytest.param({"spec": "x"}, "ns", None, id="spec-string"),
        pytest.param(job({"name": 5}), "ns", None, id="name-number"),
    ],
)
def test_runtime_path(obj: dict[str, Any], namespace: object, path: str | None) -> None:
    assert runtime_path(obj, namespace) == path
