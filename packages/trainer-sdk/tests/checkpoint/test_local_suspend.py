"""On the local backend, 2-node TrainJobs with a checkpoint volume: a running job suspended with
``suspend_job`` checkpoints and reads Suspended, ``resume_job`` starts a new attempt that resumes
from that checkpoint and ends with the parameters of an uninterrupted run; a rank that gets
SIGTERM with no restart left leaves the job Preempted (Suspended), not Failed; and a job submitted
again under the same name resumes from the checkpoint the first one left on the claim."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import torch
from trainer_sdk import LocalBackendConfig, TrainerClient, checkpoint, constants
from trainer_sdk.backends.local import volumes
from trainer_sdk.cli import app
from waiting import wait_until

from .test_local_resume import runtime, trainjob

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
WAIT_SECONDS = 600


def wait_for_step(seen: Path, step: int, ranks: int = 2) -> None:
    """Until every rank has written its line of ``step`` (bounded)."""
    files = [Path(str(seen).format(rank=rank)) for rank in range(ranks)]

    def reached() -> bool:
        lines = [file.read_text().splitlines() if file.is_file() else [] for file in files]
        return all(any(line.split()[0] == str(step) for line in rank) for rank in lines)

    wait_until(reached, f"the ranks to reach step {step}", WAIT_SECONDS)


def reasons(client: TrainerClient, name: str) -> list[str]:
    return [event.reason for event in client.get_job_events(name)]


def finish(client: TrainerClient, name: str) -> None:
    job = client.wait_for_job_status(name, timeout=WAIT_SECONDS, polling_interval=1)
    assert job.status == constants.TRAINJOB_COMPLETE, list(client.get_job_logs(name))


@pytest.fixture()
def client(tmp_path: Path) -> Any:
    client = TrainerClient(LocalBackendConfig(root=tmp_path / "jobs", stop_on_exit=True))
    yield client
    client.backend.close()  # type: ignore[attr-defined]


def test_suspend_a_running_job_then_resume_it_from_its_checkpoint(
    client: TrainerClient, tmp_path: Path
) -> None:
    outputs = {name: tmp_path / name / "out.pt" for name in ("steady", "paused")}
    for path in outputs.values():
        path.parent.mkdir()
    client.submit(trainjob("steady", outputs["steady"]), runtime())
    finish(client, "steady")
    client.submit(trainjob("paused", outputs["paused"], "--hold-at", "6"), runtime())
    wait_for_step(tmp_path / "paused" / "seen-{rank}", 6)

    client.suspend_job("paused")
    job = client.get_job("paused")
    assert job.status == constants.TRAINJOB_SUSPENDED, list(client.get_job_logs("paused"))
    assert "Suspended" in reasons(client, "paused")
    volume = volumes.claim_path("default", "ckpt", root=tmp_path / "jobs")
    saved = checkpoint.latest(volume / "paused")
    assert saved is not None and (saved.step, saved.attempt) == (6, 0)  # saved on SIGTERM

    client.resume_job("paused")
    finish(client, "paused")
    steady, resumed = torch.load(outputs["steady"]), torch.load(outputs["paused"])
    for key, tensor in steady.items():
        assert torch.equal(resumed[key], tensor), key
    assert [(r.step, r.attempt) for r in checkpoint.read_resumes(volume / "paused")] == [(6, 1)]
    shown = client.get_job("paused").checkpoint
    assert shown is not None and (shown.step, shown.attempt, shown.resumed_from_step) == (12, 1, 6)
    events = client.get_job_events("paused")
    assert [e.reason for e in events if e.reason in ("Suspended", "Resumed")] == [
        "Suspended",
        "Resumed",
    ]
    resumes = [e.message for e in events if e.reason == "ResumedFromCheckpoint"]
    assert resumes == ["attempt 1 resumed from the checkpoint of step 6"]
    # trainer get shows the latest checkpoint's step and age.
    caption = str(app._job_table(client.get_job("paused")).caption)
    assert re.search(r"checkpoint: step 12, \d+s ago \(attempt 1, resumed from step 6\)", caption)


def test_a_rank_preempted_without_restarts_left_reads_preempted_and_resumes(
    client: TrainerClient, tmp_path: Path
) -> None:
    no_restarts = runtime()
    del no_restarts["spec"]["template"]["spec"]["failurePolicy"]
    out = tmp_path / "out.pt"
    client.submit(trainjob("preempted", out, "--term-at", "5"), no_restarts)
    job = client.wait_for_job_status(
        "preempted", {constants.TRAINJOB_SUSPENDED}, timeout=WAIT_SECONDS, polling_interval=1
    )
    assert job.status == constants.TRAINJOB_SUSPENDED
    preempted = [e for e in client.get_job_events("preempted") if e.reason == "Preempted"]
    assert len(preempted) == 1 and "exited with code 143" in preempted[0].message
    volume = volumes.claim_path("default", "ckpt", root=tmp_path / "jobs")
    saved = checkpoint.latest(volume / "preempted")
    assert saved is not None and saved.step == 5

    client.resume_job("preempted")
    finish(client, "preempted")
    assert [(r.step, r.attempt) for r in checkpoint.read_resumes(volume / "preempted")] == [(5, 1)]

    # The claim outlives the job: the same name submitted again resumes from step 12.
    client.delete_job("preempted")
    client.submit(trainjob("preempted", out, "--steps", "16"), no_restarts)
    finish(client, "preempted")
    shown = client.get_job("preempted").checkpoint
    assert shown is not None and (shown.step, shown.resumed_from_step) == (16, 12)
