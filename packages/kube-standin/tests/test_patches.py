"""Patch arithmetic without a server."""

from __future__ import annotations

from typing import Any

import pytest
from kube_standin import patches


@pytest.mark.parametrize(
    ("target", "patch", "expected"),
    [
        pytest.param(
            {"a": 1, "b": {"c": 2}},
            {"b": {"d": 3}},
            {"a": 1, "b": {"c": 2, "d": 3}},
            id="nested-merge",
        ),
        pytest.param({"a": 1, "b": 2}, {"a": None}, {"b": 2}, id="null-deletes"),
        pytest.param({"a": [1, 2]}, {"a": [3]}, {"a": [3]}, id="lists-replace"),
        pytest.param({"a": {"b": 1}}, {"a": "x"}, {"a": "x"}, id="scalar-replaces-object"),
    ],
)
def test_merge_patch(
    target: dict[str, Any], patch: dict[str, Any], expected: dict[str, Any]
) -> None:
    assert patches.merge_patch(target, patch) == expected


@pytest.mark.parametrize(
    ("operations", "expected"),
    [
        pytest.param([{"op": "add", "path": "/b", "value": 2}], {"a": [1], "b": 2}, id="add"),
        pytest.param([{"op": "add", "path": "/a/-", "value": 2}], {"a": [1, 2]}, id="append"),
        pytest.param([{"op": "remove", "path": "/a/0"}], {"a": []}, id="remove-element"),
        pytest.param([{"op": "replace", "path": "/a", "value": "x"}], {"a": "x"}, id="replace"),
        pytest.param([{"op": "move", "from": "/a", "path": "/c"}], {"c": [1]}, id="move"),
        pytest.param([{"op": "copy", "from": "/a", "path": "/c"}], {"a": [1], "c": [1]}, id="copy"),
        pytest.param([{"op": "test", "path": "/a/0", "value": 1}], {"a": [1]}, id="test-passes"),
    ],
)
def test_json_patch(operations: list[dict[str, Any]], expected: dict[str, Any]) -> None:
    assert patches.json_patch({"a": [1]}, operations) == expected


@pytest.mark.parametrize(
    ("operations", "message"),
    [
        pytest.param([{"op": "test", "path": "/a/0", "value": 2}], "test failed", id="test-fails"),
        pytest.param([{"op": "remove", "path": "/zz"}], "nothing to remove", id="missing-member"),
        pytest.param([{"op": "jump", "path": "/a"}], "unknown operation", id="unknown-op"),
    ],
)
def test_json_patch_errors_name_the_operation(
    operations: list[dict[str, Any]], message: str
) -> None:
    with pytest.raises(patches.PatchError, match=message):
        patches.json_patch({"a": [1]}, operations)


def test_fields_round_trip_through_fields_v1() -> None:
    paths = patches.field_paths(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "x", "labels": {"a": "1"}},
            "data": {"k": "v"},
            "list": [1],
        }
    )
    assert paths == {("metadata", "labels", "a"), ("data", "k"), ("list",)}
    assert patches.decode_fields(patches.encode_fields(paths)) == paths


def test_apply_removes_fields_the_manager_stopped_applying() -> None:
    first, owners = patches.server_side_apply(
        {}, {"data": {"a": "1", "b": "2"}}, {}, "m", force=False
    )
    second, owners = patches.server_side_apply(
        first, {"data": {"a": "1"}}, owners, "m", force=False
    )
    assert second == {"data": {"a": "1"}}
    assert owners == {"m": {("data", "a")}}


def test_apply_keeps_fields_another_manager_owns() -> None:
    obj, owners = patches.server_side_apply(
        {}, {"data": {"a": "1", "b": "2"}}, {}, "m", force=False
    )
    obj, owners = patches.server_side_apply(obj, {"data": {"b": "2"}}, owners, "other", force=False)
    obj, owners = patches.server_side_apply(obj, {"data": {"a": "1"}}, owners, "m", force=False)
    assert obj == {"data": {"a": "1", "b": "2"}}


def test_apply_conflict_unless_forced() -> None:
    obj, owners = patches.server_side_apply({}, {"data": {"a": "1"}}, {}, "m", force=False)
    with pytest.raises(patches.ApplyConflictError, match='"m"'):
        patches.server_side_apply(obj, {"data": {"a": "2"}}, owners, "other", force=False)
    obj, owners = patches.server_side_apply(obj, {"data": {"a": "2"}}, owners, "other", force=True)
    assert obj == {"data": {"a": "2"}}
    assert owners == {"other": {("data", "a")}}
