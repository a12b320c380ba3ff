"""The local driver resumed from what a killed one left: a trial written but never submitted is
submitted, one submitted but not yet marked is adopted, and none runs twice."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest
from trainer_sdk import CustomTrainer, TrainerClient
from trainer_sdk.optimizer import (
    GridSearch,
    LocalBackendConfig,
    OptimizerClient,
    Search,
    TrainJobTemplate,
    TrialConfig,
)
from trainer_sdk.optimizer.spec import Definition, requested_job
from trainer_search import trial_annotations, trial_trainjob

pytestmark = pytest.mark.e2e


def quick(width: str) -> None:
    print(f"loss={int(width)}")


def test_a_resumed_driver_submits_what_was_written_and_adopts_what_was_submitted(
    tmp_path: Path,
) -> None:
    config = LocalBackendConfig(root=tmp_path)
    trainer = TrainerClient(config)
    definition = Definition.requested(
        {"width": Search.choice([1, 2, 3, 4])},
        TrialConfig(num_trials=4, parallel_trials=2),
        None,
        GridSearch(),
        None,
    )
    template = TrainJobTemplate(trainer=CustomTrainer(func=quick))
    manifest = requested_job(trainer.backend, "tune", template, definition).to_dict()
    written = {"name": "tune-0", "annotations": trial_annotations(0, {"width": "1"}, {})}
    submitted = {"name": "tune-1", "annotations": trial_annotations(1, {"width": "2"}, {})}
    # What a driver killed right after submitting tune-1 leaves: both written, neither marked.
    owner = {**manifest, "metadata": {**manifest["metadata"], "uid": "tune"}}
    trialjob = trial_trainjob(owner, 1, {"width": "2"}, {})
    del trialjob["metadata"]["ownerReferences"], trialjob["metadata"]["namespace"]
    trainer.submit(trialjob)
    state = {
        "name": "tune",
        "creationTimestamp": datetime.now(timezone.utc).isoformat(),
        "manifest": manifest,
        "status": {},
        "trials": [{**written, "submitted": False}, {**submitted, "submitted": False}],
        "prior": [],
    }
    (tmp_path / ".optimizations").mkdir()
    (tmp_path / ".optimizations" / "tune.json").write_text(json.dumps(state))
    client = OptimizerClient(config)
    client.resume_job("tune")
    job = client.wait_for_job_status("tune", timeout=300, polling_interval=1)
    assert job.status == "Complete"
    assert [(t.name, t.parameters["width"]) for t in job.trials] == [
        ("tune-0", "1"),
        ("tune-1", "2"),
        ("tune-2", "3"),
        ("tune-3", "4"),
    ]
    assert sorted(j.name for j in trainer.list_jobs()) == [f"tune-{n}" for n in range(4)]
    assert job.best_trial_name == "tune-0"
