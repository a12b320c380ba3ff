"""Locally, SIGTERM is a preemption, not a user failure: a pod ended by it restarts the JobSet
while ``maxRestarts`` allows and otherwise leaves it Suspended with reason Preempted; a job whose
supervisor gets SIGTERM from outside reads Suspended/Preempted, with an event, and resumes."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest
from trainer_sdk import LocalBackendConfig, TrainerClient, constants
from trainer_sdk.backends.local.jobdir import JobDir
from trainer_sdk.backends.local.supervisor import processes
from waiting import wait_until

from ..backends.local.submit.test_pods import jobset, replicated_job
from ..backends.local.supervisor.test_runner import runner_for

pytestmark = pytest.mark.e2e
WAIT_SECONDS = 120


def run(manifest: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    env = {**os.environ, "SHARED": str(tmp_path)}
    runner = runner_for(manifest, JobDir(tmp_path, "job"), env)
    status: dict[str, Any] = runner.run()
    return status


@pytest.mark.parametrize(
    "script",
    [
        pytest.param("kill -TERM $$", id="killed-by-sigterm"),
        pytest.param("exit 143", id="checkpointed-then-exited-143"),
    ],
)
def test_a_pod_ended_by_sigterm_leaves_the_jobset_preempted(script: str, tmp_path: Path) -> None:
    status = run(jobset(replicated_job("node", ["bash", "-c", script])), tmp_path)
    [condition] = status["conditions"]
    assert (condition["type"], condition["reason"]) == ("Suspended", "Preempted")
    assert status["terminalState"] is None  # not Failed
    assert "resume it to continue from its checkpoint" in condition["message"]


def test_a_preempted_pod_restarts_within_max_restarts(tmp_path: Path) -> None:
    script = 'if [ -f "$SHARED/tried" ]; then exit 0; fi; touch "$SHARED/tried"; kill -TERM $$'
    manifest = jobset(
        replicated_job("node", ["bash", "-c", script]), failurePolicy={"maxRestarts": 1}
    )
    status = run(manifest, tmp_path)
    assert [c["type"] for c in status["conditions"]] == ["Completed"]
    assert status["restarts"] == 1


def test_sigterm_to_the_job_from_outside_reads_preempted_and_resumes(tmp_path: Path) -> None:
    client = TrainerClient(LocalBackendConfig(root=tmp_path / "jobs"))
    marker = tmp_path / "attempts"
    script = f'echo "$TRAINER_RESTART_ATTEMPT" >> {marker}; [ -s {marker}.done ] || exec sleep 300'
    manifest = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "outside"},
        "spec": {
            "runtimeRef": {"name": "torch-distributed"},
            "trainer": {
                "command": ["bash", "-c", script],
                "env": [{"name": "TRAINER_RESTART_ATTEMPT", "value": "0"}],
            },
        },
    }
    from trainer_runtime import builtin_runtimes

    client.submit(manifest, builtin_runtimes()["torch-distributed"].to_dict())
    try:
        client.wait_for_job_status("outside", {constants.TRAINJOB_RUNNING}, timeout=WAIT_SECONDS)
        # Running means the pod's process started, not that its script ran: wait for its line.
        wait_until(
            lambda: marker.exists() and marker.read_text().strip(),
            "attempt 0 to write its line",
            WAIT_SECONDS,
        )
        recorded = JobDir(tmp_path / "jobs", "outside").supervisor_pid.read_text()
        guardian = processes.ProcessIdentity.parse(recorded)
        assert guardian is not None and guardian.send(signal.SIGTERM)
        job = client.wait_for_job_status(
            "outside", {constants.TRAINJOB_SUSPENDED}, timeout=WAIT_SECONDS
        )
        assert job.status == constants.TRAINJOB_SUSPENDED
        [event] = [e for e in client.get_job_events("outside") if e.reason == "Preempted"]
        assert "SIGTERM from outside" in event.message

        Path(f"{marker}.done").write_text("1")
        client.resume_job("outside")
        job = client.wait_for_job_status("outside", timeout=WAIT_SECONDS)
        assert job.status == constants.TRAINJOB_COMPLETE
        assert marker.read_text().split() == ["0", "1"]  # the resume is attempt 1
    finally:
        client.delete_job("outside")
