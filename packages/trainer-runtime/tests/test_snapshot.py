"""The runtime snapshot ConfigMap round-trips the runtime."""

from __future__ import annotations

import pytest
from runtime_cases import make_job, runtime_doc
from trainer_runtime.errors import BuildError
from trainer_runtime.snapshot import from_snapshot, to_snapshot


def test_snapshot_round_trips_and_is_owned() -> None:
    runtime = runtime_doc("deepspeed-distributed")
    snapshot = to_snapshot(make_job(), runtime)
    assert snapshot["metadata"]["name"] == "alpha-runtime-snapshot"
    assert snapshot["metadata"]["ownerReferences"][0]["name"] == "alpha"
    assert snapshot["immutable"] is True
    assert from_snapshot(snapshot) == runtime


@pytest.mark.parametrize(
    ("data", "message"),
    [
        pytest.param({}, "is missing", id="no-key"),
        pytest.param(
            {"runtime.json": '{"kind": "Pod"}'}, "does not hold a training", id="not-a-runtime"
        ),
        pytest.param({"runtime.json": "kind: Pod"}, "is not JSON", id="not-json"),
    ],
)
def test_bad_snapshot_is_a_build_error(data: dict, message: str) -> None:
    with pytest.raises(BuildError, match=message):
        from_snapshot({"metadata": {"name": "alpha-runtime-snapshot"}, "data": data})
