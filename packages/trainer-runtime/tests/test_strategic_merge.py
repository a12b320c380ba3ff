"""strategic_merge: maps by key, keyed lists by merge key, everything else replaced."""

from __future__ import annotations

from typing import Any

import pytest
from trainer_runtime.strategic_merge import strategic_merge

CASES = [
    pytest.param(
        {"a": 1, "b": {"c": 2}}, {"b": {"d": 3}}, {"a": 1, "b": {"c": 2, "d": 3}}, id="maps-merge"
    ),
    pytest.param({"a": 1, "b": 2}, {"a": None}, {"b": 2}, id="null-deletes-key"),
    pytest.param({"a": [1, 2]}, {"a": [3]}, {"a": [3]}, id="plain-list-replaced"),
    pytest.param(
        {"tolerations": [{"key": "a"}]},
        {"tolerations": [{"key": "b"}]},
        {"tolerations": [{"key": "b"}]},
        id="tolerations-atomic",
    ),
    pytest.param(
        {"env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]},
        {"env": [{"name": "B", "value": "3"}, {"name": "C", "value": "4"}]},
        {
            "env": [
                {"name": "A", "value": "1"},
                {"name": "B", "value": "3"},
                {"name": "C", "value": "4"},
            ]
        },
        id="env-by-name-order-kept",
    ),
    pytest.param(
        {"env": [{"name": "A", "value": "1"}]},
        {"env": [{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "x"}}}]},
        {"env": [{"name": "A", "value": "1", "valueFrom": {"fieldRef": {"fieldPath": "x"}}}]},
        id="env-item-merged-as-map",
    ),
    pytest.param(
        {"volumeMounts": [{"name": "a", "mountPath": "/a"}]},
        {"volumeMounts": [{"name": "b", "mountPath": "/a"}, {"name": "c", "mountPath": "/c"}]},
        {"volumeMounts": [{"name": "b", "mountPath": "/a"}, {"name": "c", "mountPath": "/c"}]},
        id="volume-mounts-by-mount-path",
    ),
    pytest.param(
        {"replicatedJobs": [{"name": "init"}, {"name": "node", "replicas": 1}]},
        {"replicatedJobs": [{"name": "node", "replicas": 2}, {"name": "extra"}]},
        {"replicatedJobs": [{"name": "init"}, {"name": "node", "replicas": 2}, {"name": "extra"}]},
        id="replicated-jobs-by-name-order-kept",
    ),
    pytest.param(
        {"containers": [{"name": "node", "image": "a", "env": [{"name": "X", "value": "1"}]}]},
        {"containers": [{"name": "node", "env": [{"name": "Y", "value": "2"}]}]},
        {
            "containers": [
                {
                    "name": "node",
                    "image": "a",
                    "env": [{"name": "Y", "value": "2"}, {"name": "X", "value": "1"}],
                }
            ]
        },
        id="nested-containers-and-env-new-item-first",
    ),
    pytest.param(
        {"env": [{"name": "INIT_ENV", "value": "a"}, {"name": "DATASET_PATH", "value": "r"}]},
        {"env": [{"name": "INIT_ENV", "value": "b"}, {"name": "NEW_VALUE", "value": "p"}]},
        {
            "env": [
                {"name": "INIT_ENV", "value": "b"},
                {"name": "NEW_VALUE", "value": "p"},
                {"name": "DATASET_PATH", "value": "r"},
            ]
        },
        id="upstream-init-env-order",
    ),
    pytest.param(
        {"env": [{"name": "A"}, {"name": "B"}, {"name": "C"}]},
        {"env": [{"name": "C"}, {"name": "A"}]},
        {"env": [{"name": "B"}, {"name": "C"}, {"name": "A"}]},
        id="patch-order-wins-server-only-kept-before-later-items",
    ),
    pytest.param({}, {"a": {"b": 1}}, {"a": {"b": 1}}, id="new-map"),
    pytest.param({"a": {"b": 1}}, {"a": "x"}, {"a": "x"}, id="scalar-replaces-map"),
]


@pytest.mark.parametrize(("original", "patch", "expected"), CASES)
def test_strategic_merge(
    original: dict[str, Any], patch: dict[str, Any], expected: dict[str, Any]
) -> None:
    assert strategic_merge(original, patch) == expected


def test_strategic_merge_does_not_mutate_inputs() -> None:
    original = {"env": [{"name": "A", "value": "1"}], "m": {"k": "v"}}
    patch = {"env": [{"name": "A", "value": "2"}], "m": {"k": "w"}}
    merged = strategic_merge(original, patch)
    merged["env"][0]["value"] = "changed"
    assert original == {"env": [{"name": "A", "value": "1"}], "m": {"k": "v"}}
    assert patch == {"env": [{"name": "A", "value": "2"}], "m": {"k": "w"}}
