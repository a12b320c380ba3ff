"""The TrainJob webhook reads a runtime only by a name that stays in the runtimes collection."""

from __future__ import annotations

from typing import Any

import pytest
from trainer_controller.operator.webhooks import _runtime_path

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
    assert _runtime_path(obj, namespace) == path
