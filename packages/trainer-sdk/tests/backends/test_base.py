"""What every backend shares: wait_for_job_status's argument checks (upstream's rules), its
callbacks (upstream's cadence), failure errors, and runtime names for train()."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime, timezone
from typing import Any

import pytest
from trainer_sdk import JobFailedError, Runtime, RuntimeNotFoundError, TrainJob, constants, types
from trainer_sdk.backends.base import AnyTrainer, RuntimeBackend, check_wait_arguments
from trainer_sdk.options import Option

from ..conftest import make_runtime

CREATED = datetime(2026, 1, 1, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    ("status", "timeout", "interval", "message"),
    [
        pytest.param(set(), 10, 1, "status", id="empty-status"),
        pytest.param({"Done"}, 10, 1, r"\['Done'\] not in", id="unknown-status"),
        pytest.param({"Complete"}, 0, 1, "Timeout must be a positive number", id="zero-timeout"),
        pytest.param(
            {"Complete"}, 10, -1, "Polling interval must be a positive", id="negative-interval"
        ),
        pytest.param({"Complete"}, 1, 5, "strictly less than timeout", id="interval-over-timeout"),
        pytest.param(
            {"Complete"}, 5, 5, "strictly less than timeout", id="interval-equal-to-timeout"
        ),
    ],
)
def test_bad_arguments_are_refused_as_upstream_refuses_them(
    status: Any, timeout: Any, interval: Any, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        check_wait_arguments(status, timeout, interval)


def test_good_arguments_pass() -> None:
    check_wait_arguments({"Complete", "Failed"}, 600, 2)


class ScriptedBackend(RuntimeBackend):
    """A backend whose one job follows a timeline of (seconds, status) on a fake clock."""

    kind = "scripted"

    def __init__(self, timeline: Sequence[tuple[float, str]], logs: Sequence[str] = ()) -> None:
        self.timeline = timeline
        self.logs = list(logs)
        self.now = 0.0
        self.polls = 0

    def _clock(self) -> float:
        return self.now

    def _pause(self, name: str, seconds: float) -> None:
        assert seconds > 0, "the wait must not spin"
        self.now += seconds

    def runtime_manifests(self) -> dict[str, dict[str, Any]]:
        return {
            "torch-distributed": {
                "kind": constants.CLUSTER_TRAINING_RUNTIME_KIND,
                "metadata": {"name": "torch-distributed"},
            }
        }

    def get_job(self, name: str) -> TrainJob:
        self.polls += 1
        status = [status for at, status in self.timeline if at <= self.now][-1]
        step_status = constants.POD_FAILED if status == constants.TRAINJOB_FAILED else "Running"
        return TrainJob(
            name=name,
            runtime=make_runtime(),
            steps=[types.Step(name="node-0", status=step_status, pod_name=f"{name}-node-0-0")],
            num_nodes=1,
            creation_timestamp=CREATED,
            status=status,
            message="JobFailed: node-0 exited with code 1",
        )

    def get_job_logs(self, name: str, step: str = "node-0", follow: bool = False) -> Iterator[str]:
        return iter(self.logs)

    def get_job_events(self, name: str) -> list[types.Event]:
        return []

    def get_job_manifest(self, name: str) -> dict[str, Any]:
        raise NotImplementedError

    def get_jobset_manifest(self, name: str) -> dict[str, Any] | None:
        raise NotImplementedError

    def train(
        self,
        runtime: str | Runtime | None = None,
        initializer: types.Initializer | None = None,
        trainer: AnyTrainer | None = None,
        options: Sequence[Option] | None = None,
    ) -> str:
        return self.resolve_runtime(runtime).name

    def submit(self, manifest: dict[str, Any], runtime: dict[str, Any] | None = None) -> str:
        raise NotImplementedError

    def list_jobs(self, runtime: Runtime | None = None) -> list[TrainJob]:
        return [self.get_job("job")]

    def delete_job(self, name: str) -> None:
        raise NotImplementedError


def test_callbacks_get_the_job_once_per_polling_interval_and_the_final_one() -> None:
    backend = ScriptedBackend([(0, "Created"), (2, "Running"), (5, "Complete")])
    seen: list[tuple[float, str]] = []
    also: list[str] = []
    job = backend.wait_for_job_status(
        "job",
        timeout=60,
        polling_interval=1,
        callbacks=[
            lambda job: seen.append((backend.now, job.status)),
            lambda j: also.append(j.name),
        ],
    )
    assert job.status == "Complete"
    assert seen == [
        (0, "Created"),
        (1, "Created"),
        (2, "Running"),
        (3, "Running"),
        (4, "Running"),
        (5, "Complete"),
    ]
    assert also == ["job"] * 6


def test_callbacks_see_the_failed_job_before_the_error() -> None:
    backend = ScriptedBackend([(0, "Running"), (3, "Failed")])
    seen: list[str] = []
    with pytest.raises(JobFailedError):
        backend.wait_for_job_status(
            "job", timeout=60, polling_interval=2, callbacks=[lambda job: seen.append(job.status)]
        )
    assert seen == ["Running", "Running", "Failed"]


def test_a_wait_times_out_after_timeout_seconds_of_its_clock() -> None:
    backend = ScriptedBackend([(0, "Running")])
    with pytest.raises(TimeoutError, match="it is Running"):
        backend.wait_for_job_status("job", timeout=7, polling_interval=2)
    assert backend.now == 7


TORCHRUN_FAILURE = """\
[rank1]: Traceback (most recent call last):
[rank1]:   File "/tmp/job/train.py", line 8, in train
[rank1]:     raise ValueError(f"bad learning rate {x}")
[rank1]: ValueError: bad learning rate 0.1
E1201 11:37:53.520000 23881 torch/distributed/elastic/multiprocessing/api.py:1002] failed
Traceback (most recent call last):
  File "torch/distributed/launcher/api.py", line 383, in launch_agent
    raise ChildFailedError(
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
Root Cause (first observed failure):
[0]:
  rank      : 1 (local_rank: 1)
============================================================"""


def test_a_failed_job_raises_with_the_users_exception_and_rank_first() -> None:
    backend = ScriptedBackend([(0, "Failed")], TORCHRUN_FAILURE.splitlines())
    with pytest.raises(JobFailedError) as raised:
        backend.wait_for_job_status("job")
    error = raised.value
    first_line = str(error).splitlines()[0]
    assert first_line == (
        "TrainJob 'job' failed: ValueError: bad learning rate 0.1 (rank 1, step node-0)"
    )
    assert "ChildFailedError" not in str(error)
    assert (error.exception, error.rank, error.step) == (
        "ValueError: bad learning rate 0.1",
        1,
        "node-0",
    )
    assert isinstance(error, RuntimeError)


def test_a_failure_without_a_traceback_keeps_the_log_tail() -> None:
    backend = ScriptedBackend([(0, "Failed")], ["out of disk"])
    with pytest.raises(
        JobFailedError, match=r"failed \(step node-0\): JobFailed.*\n  \| out of disk"
    ):
        backend.wait_for_job_status("job")


@pytest.mark.parametrize(
    "runtime",
    [
        pytest.param("torch-distributed", id="a-name"),
        pytest.param(make_runtime(), id="a-runtime"),
        pytest.param(None, id="none-is-torch-distributed"),
    ],
)
def test_train_takes_a_runtime_name_or_a_runtime(runtime: str | Runtime | None) -> None:
    assert ScriptedBackend([(0, "Created")]).train(runtime=runtime) == "torch-distributed"


def test_an_unknown_runtime_name_is_not_found_as_value_and_runtime_error() -> None:
    with pytest.raises(RuntimeNotFoundError) as raised:
        ScriptedBackend([(0, "Created")]).train(runtime="no-such-runtime")
    assert isinstance(raised.value, ValueError) and isinstance(raised.value, RuntimeError)


def test_a_runtime_of_another_type_is_refused_naming_the_argument() -> None:
    with pytest.raises(ValueError, match="runtime: expected a runtime name or a Runtime"):
        ScriptedBackend([(0, "Created")]).train(runtime=42)  # type: ignore[arg-type]
