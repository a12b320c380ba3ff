"""build(): lifecycle decisions, status and the objects to apply."""

from __future__ import annotations

from controller_cases import FIXED_SETTINGS, NOW, by_kind, make_job, runtime_doc
from trainer_controller import Observed, build


def test_first_build_applies_snapshot_then_jobset() -> None:
    plan = build(
        make_job(numNodes=2),
        runtime_doc("torch-distributed"),
        Observed(),
        NOW,
        settings=FIXED_SETTINGS,
    )
    assert [obj["kind"] for obj in plan.apply] == ["ConfigMap", "JobSet"]
    assert by_kind(list(plan.apply), "ConfigMap")[0]["metadata"]["name"] == "alpha-runtime-snapshot"
    assert plan.status is not None
    assert [c.type for c in plan.status.conditions] == ["Created"]
