"""The in-memory backend: jobs driven by the test, read through the interface every backend
shares, with no process and no file."""

from __future__ import annotations

import threading

import pytest
from trainer_sdk import (
    CustomTrainerContainer,
    InvalidTrainJobError,
    Name,
    TrainerClient,
    TrainerCommand,
    constants,
)
from trainer_sdk.backends.memory import InMemoryBackend, MemoryJob

JOB = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "TrainJob",
    "metadata": {"name": "two"},
    "spec": {
        "runtimeRef": {"name": "torch-distributed"},
        "trainer": {"numNodes": 2, "command": ["true"]},
    },
}


def test_a_run_function_drives_each_new_job_and_readers_see_it() -> None:
    def run(job: MemoryJob) -> None:
        job.start()
        job.log("node-0", "hello")
        job.record(3, loss=0.5)
        job.use(f"{job.name}-node-0-0", 1.5, 1 << 20)
        job.complete()

    backend = InMemoryBackend(run)
    client = TrainerClient(backend=backend)
    client.submit(JOB)
    job = client.get_job("two")
    assert (job.status, [step.name for step in job.steps]) == ("Complete", ["node-0", "node-1"])
    assert list(client.get_job_logs("two")) == ["hello"]
    assert [(point.step, point.values) for point in client.get_job_metrics("two")] == [
        (3, {"loss": 0.5})
    ]
    assert backend.sample_resources(["two", "gone"]) == {"two": {"two-node-0-0": (1.5, 1 << 20)}}
    assert backend.get_job_manifest("two")["status"]["conditions"][0]["type"] == "Complete"
    jobset = backend.get_jobset_manifest("two")
    assert jobset is not None and jobset["kind"] == "JobSet"


def test_a_job_is_admitted_as_the_local_backend_admits_it() -> None:
    reserved = {
        **JOB,
        "spec": {
            "runtimeRef": {"name": "torch-distributed"},
            "trainer": {"env": [{"name": "PET_NNODES", "value": "1"}]},
        },
    }
    with pytest.raises(InvalidTrainJobError) as raised:
        TrainerClient(backend=InMemoryBackend()).submit(reserved)
    assert [error.field for error in raised.value.errors] == ["spec.trainer.env[0].name"]


def test_following_a_log_ends_with_the_job_and_waiting_returns_when_it_changes() -> None:
    backend = InMemoryBackend()
    client = TrainerClient(backend=backend)
    client.train(
        trainer=CustomTrainerContainer(image="i"), options=[Name("one"), TrainerCommand(["x"])]
    )
    job = backend.job("one")
    job.start()
    followed: list[str] = []
    reader = threading.Thread(
        target=lambda: followed.extend(client.get_job_logs("one", follow=True))
    )
    reader.start()
    job.log("node-0", "a", "b")
    job.fail("rank 0 exited with code 1")
    reader.join(timeout=60)
    assert not reader.is_alive() and followed == ["a", "b"]
    with pytest.raises(RuntimeError, match="rank 0 exited with code 1"):
        client.wait_for_job_status("one", timeout=60, polling_interval=30)


def test_stop_suspend_and_resume() -> None:
    started: list[str] = []
    backend = InMemoryBackend(lambda job: (started.append(job.name), job.start()))
    client = TrainerClient(backend=backend)
    client.submit(JOB)
    client.suspend_job("two")
    assert client.get_job("two").status == constants.TRAINJOB_SUSPENDED
    client.resume_job("two")
    assert client.get_job("two").status == constants.TRAINJOB_RUNNING
    assert started == ["two", "two"]
    client.stop_job("two")
    job = client.get_job("two")
    assert job.status == constants.TRAINJOB_STOPPED
    assert {step.status for step in job.steps} == {constants.POD_FAILED}
    client.delete_job("two")
    assert client.list_jobs() == []
