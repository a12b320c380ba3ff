"""TrainJobs counted by state."""

from __future__ import annotations

from typing import Any

import pytest
from trainer_controller.operator.metrics import OperatorMetrics, trainjob_state


def job(*conditions: tuple[str, str], jobs: bool = False) -> dict[str, Any]:
    status: dict[str, Any] = {
        "conditions": [{"type": kind, "status": value} for kind, value in conditions]
    }
    if jobs:
        status["jobsStatus"] = [{"name": "node"}]
    return {"status": status}


@pytest.mark.parametrize(
    ("obj", "state"),
    [
        pytest.param({}, "Created", id="new"),
        pytest.param(job(("Created", "True"), jobs=True), "Running", id="running"),
        pytest.param(job(("Suspended", "True")), "Suspended", id="suspended"),
        pytest.param(job(("Suspended", "False"), jobs=True), "Running", id="resumed"),
        pytest.param(job(("Complete", "True")), "Complete", id="complete"),
        pytest.param(job(("Failed", "True")), "Failed", id="failed"),
    ],
)
def test_trainjob_state(obj: dict[str, Any], state: str) -> None:
    assert trainjob_state(obj) == state


def test_gauge_follows_each_job_and_forgets_deleted_ones() -> None:
    metrics = OperatorMetrics()
    metrics.record_trainjob(("ns", "a"), job(("Complete", "True")))
    metrics.record_trainjob(("ns", "b"), job(("Complete", "True")))
    metrics.record_trainjob(("ns", "b"), None)
    text = metrics.exposition().decode()
    assert 'trainer_trainjobs{state="Complete"} 1.0' in text
    assert 'trainer_trainjobs{state="Failed"} 0.0' in text
