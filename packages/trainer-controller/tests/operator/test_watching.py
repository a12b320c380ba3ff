"""Mapping owned-object events back to their TrainJob."""

from __future__ import annotations

from typing import Any

import pytest
from trainer_controller.operator.watching import owner_keys


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
