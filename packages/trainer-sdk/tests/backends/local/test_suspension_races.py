"""Suspend and resume are idempotent under races (issue 40, findings 10 and 11): a suspend that
comes while the job's supervisor starts reads Suspended and resumes, and two resumes at once
start one attempt."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from trainer_sdk import LocalBackendConfig, TrainerClient, constants
from trainer_sdk.backends.local.jobdir import JobDir
from waiting import wait_until

pytestmark = pytest.mark.e2e
WAIT_SECONDS = 120.0


def recording_job(name: str, marker: Path) -> dict[str, Any]:
    """A job whose pod appends its attempt number to ``marker``, then waits for
    ``marker.done`` (the test's gate) to exist."""
    script = (
        f'echo "$TRAINER_RESTART_ATTEMPT" >> {marker}; '
        f"while [ ! -e {marker}.done ]; do sleep 0.05; done"
    )
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name},
        "spec": {
            "runtimeRef": {"name": "torch-distributed"},
            "trainer": {
                "command": ["bash", "-c", script],
                "env": [{"name": "TRAINER_RESTART_ATTEMPT", "value": "0"}],
            },
        },
    }


@pytest.fixture()
def client(tmp_path: Path) -> Any:
    client = TrainerClient(LocalBackendConfig(root=tmp_path / "jobs"))
    yield client
    for job in client.list_jobs():
        client.delete_job(job.name)


def test_suspend_right_after_submit_reads_suspended_and_resumes(
    client: TrainerClient, tmp_path: Path
) -> None:
    """The suspend's SIGTERM reached the supervisor while its interpreter started, before any
    handler: it died, and the job read Failed (SupervisorLost) and could not be resumed."""
    marker = tmp_path / "attempts"
    name = client.submit(recording_job("early", marker))
    client.suspend_job(name)
    job = client.get_job(name)
    assert job.status == constants.TRAINJOB_SUSPENDED, job.message
    supervisor_log = JobDir(tmp_path / "jobs", name).supervisor_log.read_text()
    assert "Traceback" not in supervisor_log, supervisor_log
    (tmp_path / "attempts.done").write_text("")
    client.resume_job(name)
    job = client.wait_for_job_status(name, timeout=WAIT_SECONDS, polling_interval=0.2)
    assert job.status == constants.TRAINJOB_COMPLETE
    assert marker.read_text().split()[-1] == "1"  # the resumed attempt ran


def test_two_resumes_at_once_start_one_attempt(client: TrainerClient, tmp_path: Path) -> None:
    """The second resume waited for the first one's supervisor to let go of the job's lock:
    while the resumed attempt ran it failed ('its supervisor has not ended'), after it had ended
    it started another attempt of the job the first had already completed."""
    marker = tmp_path / "attempts"
    name = client.submit(recording_job("twice", marker))
    wait_until(lambda: marker.is_file() and marker.read_text().split() == ["0"], "attempt 0")
    client.suspend_job(name)
    assert client.get_job(name).status == constants.TRAINJOB_SUSPENDED
    start = threading.Barrier(2)
    errors: list[BaseException] = []

    def resume() -> None:
        start.wait(timeout=WAIT_SECONDS)
        try:
            client.resume_job(name)
        except BaseException as error:  # reported below, in the test's thread
            errors.append(error)

    threads = [threading.Thread(target=resume) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=WAIT_SECONDS)
    assert not errors, errors
    (tmp_path / "attempts.done").write_text("")  # the resumed attempt runs until both returned
    job = client.wait_for_job_status(name, timeout=WAIT_SECONDS, polling_interval=0.2)
    assert job.status == constants.TRAINJOB_COMPLETE
    assert marker.read_text().split() == ["0", "1"]
