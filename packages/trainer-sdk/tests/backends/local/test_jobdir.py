"""Job directories: names, damaged directories, file modes, and what readers make of them."""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from trainer_sdk import (
    CustomTrainerContainer,
    JobNotFoundError,
    LocalBackendConfig,
    Name,
    TrainerClient,
    TrainerCommand,
    constants,
)
from trainer_sdk.backends.local.jobdir import JobDir, hold_lock, lock_held
from waiting import wait_until

DEADLINE_SECONDS = 90.0


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("job\n", id="trailing-newline"),
        pytest.param("a" * 300, id="300-characters"),
        pytest.param("Job", id="upper-case"),
        pytest.param("../job", id="path"),
    ],
)
def test_names_that_are_not_dns_names_are_refused(name: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="name: expected a lower-case DNS name"):
        JobDir(tmp_path, name)


@pytest.mark.parametrize("name", ["job\n", "a" * 300])
def test_get_job_of_such_a_name_is_not_found(name: str, tmp_path: Path) -> None:
    with pytest.raises(JobNotFoundError):
        TrainerClient(LocalBackendConfig(root=tmp_path)).get_job(name)


def test_a_lock_is_held_for_as_long_as_its_descriptor_is_open(tmp_path: Path) -> None:
    path = tmp_path / "supervisor.lock"
    assert not lock_held(path)
    fd = hold_lock(path)
    assert lock_held(path) and lock_held(path)  # probing leaves it held
    os.close(fd)
    assert not lock_held(path)


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TrainerClient]:
    trainer_client = TrainerClient(LocalBackendConfig(root=tmp_path / "jobs", stop_on_exit=True))
    yield trainer_client
    trainer_client.backend.close()  # type: ignore[attr-defined]


def finished_job(client: TrainerClient, name: str) -> JobDir:
    client.train(
        trainer=CustomTrainerContainer(image="i"),
        options=[Name(name), TrainerCommand(["bash", "-c", "echo secret-output"])],
    )
    client.wait_for_job_status(name, timeout=DEADLINE_SECONDS, polling_interval=0.2)
    return JobDir(client.backend.root, name)  # type: ignore[attr-defined]


def modes(path: Path) -> dict[str, int]:
    return {
        str(item.relative_to(path)): stat.S_IMODE(item.stat().st_mode)
        for item in [path, *path.rglob("*")]
        if "pods" not in item.relative_to(path).parts and "bin" not in item.parts
    }


@pytest.mark.e2e
def test_a_jobs_directory_and_files_are_private_to_its_user(client: TrainerClient) -> None:
    job_dir = finished_job(client, "private")
    found = modes(job_dir.path)
    assert {"state.json", "supervisor.log", "supervisor.pid", "logs/node-0.log"} <= set(found)
    readable_by_others = {name: oct(mode) for name, mode in found.items() if mode & 0o077}
    assert readable_by_others == {}
    assert stat.S_IMODE(job_dir.root.stat().st_mode) == 0o700


@pytest.mark.e2e
def test_a_directory_a_killed_submission_left_does_not_break_list_get_or_delete(
    client: TrainerClient,
) -> None:
    """One client killed after writing trainjob.json (no state.json, lock free); another after
    only creating the directory."""
    good = finished_job(client, "good")
    broken = JobDir(good.root, "broken")
    broken.path.mkdir(mode=0o700)
    for source, target in [(good.trainjob, broken.trainjob), (good.runtime, broken.runtime)]:
        target.write_text(source.read_text().replace('"good"', '"broken"'))
    empty = JobDir(good.root, "empty")
    empty.path.mkdir(mode=0o700)

    listed = {job.name: job for job in client.list_jobs()}
    assert sorted(listed) == ["broken", "good"]
    assert listed["good"].status == constants.TRAINJOB_COMPLETE
    job = client.get_job("broken")
    assert job.status == constants.TRAINJOB_FAILED
    assert "submission was interrupted" in (job.message or "")
    with pytest.raises(JobNotFoundError):
        client.get_job("empty")
    client.delete_job("broken")
    client.delete_job("empty")
    assert sorted(path.name for path in good.root.iterdir()) == ["good"]


@pytest.mark.e2e
def test_a_job_submitted_suspended_reads_suspended(client: TrainerClient) -> None:
    manifest: dict[str, Any] = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "paused"},
        "spec": {
            "suspend": True,
            "runtimeRef": {"name": "torch-distributed"},
            "trainer": {"numNodes": 1, "command": ["true"]},
        },
    }
    name = client.backend.submit(manifest)  # type: ignore[attr-defined]
    job_dir = JobDir(client.backend.root, name)  # type: ignore[attr-defined]
    # the supervisor has nothing to run and exits
    wait_until(
        lambda: not lock_held(job_dir.supervisor_lock),
        "the supervisor of a suspended job to exit",
        DEADLINE_SECONDS,
    )
    job = client.get_job(name)
    assert (job.status, job.message) == (constants.TRAINJOB_SUSPENDED, None)
    assert not job_dir.log("node-0").exists()
    shutil.rmtree(job_dir.path)
