"""The reconcile's pure helpers: when an object needs applying, and what status patch to send."""

from __future__ import annotations

from typing import Any

import pytest
from trainer_controller.operator.reconcile import contains, status_patch


@pytest.mark.parametrize(
    ("actual", "wanted", "expected"),
    [
        pytest.param({"a": 1, "server": "x"}, {"a": 1}, True, id="extra-server-fields"),
        pytest.param({"a": 1}, {"a": 2}, False, id="different-value"),
        pytest.param(
            {"a": {"b": [1, {"c": 2, "d": 3}]}}, {"a": {"b": [1, {"c": 2}]}}, True, id="nested"
        ),
        pytest.param({"a": [1, 2]}, {"a": [1]}, False, id="list-length"),
        pytest.param(None, {"a": 1}, False, id="absent"),
        pytest.param({"a": None}, {"a": {}}, False, id="empty-object-vs-null"),
    ],
)
def test_contains(actual: Any, wanted: Any, expected: bool) -> None:
    assert contains(actual, wanted) is expected


@pytest.mark.parametrize(
    ("old", "new", "patch"),
    [
        pytest.param({}, {"conditions": [1]}, {"conditions": [1]}, id="new-field"),
        pytest.param(
            {"conditions": [1], "jobsStatus": [2]},
            {"conditions": [1]},
            {"jobsStatus": None},
            id="removed-field-nulled",
        ),
        pytest.param(
            {"trainerStatus": {"p": 1}},
            {"trainerStatus": {"p": 0}},
            {},
            id="trainer-status-untouched",
        ),
        pytest.param({"conditions": [1]}, {"conditions": [1]}, {}, id="unchanged"),
    ],
)
def test_status_patch(old: dict[str, Any], new: dict[str, Any], patch: dict[str, Any]) -> None:
    assert status_patch(old, new) == patch
