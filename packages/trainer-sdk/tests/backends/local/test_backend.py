"""The local backend end to end: real processes, real torch.distributed (gloo), state on disk."""

from __future__ import annotations

import inspect
import os
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from call_counts import count_calls
from trainer_sdk import (
    CustomTrainer,
    CustomTrainerContainer,
    JobFailedError,
    JobNotFoundError,
    LocalBackendConfig,
    Name,
    RuntimeNotFoundError,
    TrainerClient,
    TrainerCommand,
    TrainerError,
    constants,
)
from trainer_sdk.backends.local import plan
from trainer_sdk.backends.local.jobdir import JobDir
from trainer_sdk.backends.local.supervisor import isolation
from trainer_sdk.private_files import read_json
from waiting import wait_until

pytestmark = pytest.mark.e2e
DEADLINE_SECONDS = 120


def is_gone(pid: int) -> bool:
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TrainerClient]:
    # stop_on_exit: a test that fails half-way leaves no job running behind it.
    trainer_client = TrainerClient(LocalBackendConfig(root=tmp_path / "jobs", stop_on_exit=True))
    yield trainer_client
    trainer_client.backend.close()  # type: ignore[attr-defined]


def distributed_step(message: str, repeat: int = 1) -> None:
    import os

    import torch
    import torch.distributed as dist
    from trainer_sdk import update_trainjob_status

    dist.init_process_group("gloo")
    total = torch.tensor([float(dist.get_rank() + 1)])
    dist.all_reduce(total)
    for _ in range(repeat):
        print(
            f"{message} rank={dist.get_rank()} world={dist.get_world_size()} "
            f"sum={total.item():.0f} "
            f"marker={os.environ.get('MARKER')} parent={os.environ.get('PARENT_ONLY')}"
        )
    if dist.get_rank() == 0:
        update_trainjob_status(100, 0, {"sum": total.item()})
    dist.destroy_process_group()


def test_two_node_torch_job_completes_with_args_env_progress_and_logs(
    client: TrainerClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PARENT_ONLY", "inherited")
    name = client.train(
        trainer=CustomTrainer(
            func=distributed_step,
            func_args={"message": "hello"},
            num_nodes=2,
            resources_per_node={"cpu": 1},
            env={"MARKER": "from-env"},
        )
    )
    followed = list(client.get_job_logs(name, step="node-1", follow=True))
    job = client.wait_for_job_status(name, timeout=DEADLINE_SECONDS, polling_interval=1)
    assert job.status == constants.TRAINJOB_COMPLETE
    assert [(step.name, step.status) for step in job.steps] == [
        ("node-0", "Succeeded"),
        ("node-1", "Succeeded"),
    ]
    assert "hello rank=1 world=2 sum=3 marker=from-env parent=inherited" in followed
    assert "hello rank=0 world=2 sum=3 marker=from-env parent=inherited" in list(
        client.get_job_logs(name)
    )
    assert job.trainer_status is not None and job.trainer_status.metrics == {"sum": "3.0"}
    [listed] = client.list_jobs()
    assert (listed.name, listed.status, listed.runtime.name) == (
        name,
        "Complete",
        "torch-distributed",
    )
    assert {event.reason for event in client.get_job_events(name)} >= {"Started", "Completed"}


def test_failure_raises_runtime_error_with_the_failing_steps_last_lines(
    client: TrainerClient,
) -> None:
    trainer = CustomTrainerContainer(image="ignored:1", num_nodes=2)
    command = TrainerCommand(
        ["bash", "-c", 'if [ "$PET_NODE_RANK" = 1 ]; then echo "bad input"; exit 3; fi; sleep 60']
    )
    name = client.train(trainer=trainer, options=[command, Name("fails")])
    with pytest.raises(RuntimeError) as raised:
        client.wait_for_job_status(name, timeout=DEADLINE_SECONDS, polling_interval=1)
    assert isinstance(raised.value, JobFailedError)
    assert raised.value.step == "node-1"
    assert "bad input" in raised.value.last_lines
    assert client.get_job(name).status == constants.TRAINJOB_FAILED
    assert "image ignored:1 recorded" in next(iter(client.get_job_logs(name, step="node-0")))
    job_dir = JobDir(client.backend.root, name)  # type: ignore[attr-defined]
    wait_until(lambda: read_json(job_dir.state).get("finished"), "the job to finish")
    assert [(step.name, step.status) for step in client.get_job(name).steps] == [
        ("node-0", "Failed"),
        ("node-1", "Failed"),
    ]


def raises_on_rank_one(learning_rate: float) -> None:
    import torch.distributed as dist

    def check(value: float) -> None:
        raise ValueError(f"bad learning rate {value}")

    dist.init_process_group("gloo")
    if dist.get_rank() == 1:
        check(learning_rate)
    dist.barrier()


def test_a_failed_function_reports_its_own_exception_and_rank_first(
    client: TrainerClient,
) -> None:
    name = client.train(
        trainer=CustomTrainer(
            func=raises_on_rank_one, func_args={"learning_rate": 0.1}, num_nodes=2
        ),
        options=[Name("raises")],
    )
    with pytest.raises(JobFailedError) as raised:
        client.wait_for_job_status(name, timeout=DEADLINE_SECONDS, polling_interval=1)
    lines = str(raised.value).splitlines()
    assert lines[0] == (
        "TrainJob 'raises' failed: ValueError: bad learning rate 0.1 (rank 1, step node-1)"
    )
    assert any("in check" in line for line in lines), lines
    # The line of the user's file, not of the pod's generated one (which began at the function).
    raising_line = inspect.getsourcelines(raises_on_rank_one)[1] + 4  # check's raise
    assert any(f'test_backend.py", line {raising_line}, in check' in line for line in lines), lines
    assert "ChildFailedError" not in str(raised.value)


def test_delete_ends_the_process_tree_and_removes_the_job(client: TrainerClient) -> None:
    name = client.train(
        trainer=CustomTrainerContainer(image="i", num_nodes=2),
        options=[TrainerCommand(["bash", "-c", "sleep 120 & sleep 120"])],
    )
    job_dir = JobDir(client.backend.root, name)  # type: ignore[attr-defined]
    wait_until(
        lambda: all(pod.get("pid") for pod in read_json(job_dir.state)["pods"]), "pods to start"
    )
    pids = [pod["pid"] for pod in read_json(job_dir.state)["pods"]]
    client.delete_job(name)
    assert all(is_gone(pid) for pid in pids)
    with pytest.raises(JobNotFoundError):
        client.get_job(name)


def test_stop_on_exit_ends_the_jobs_when_the_client_process_exits(tmp_path: Path) -> None:
    root = tmp_path / "jobs"
    script = textwrap.dedent(f"""
        from trainer_sdk import (
            CustomTrainerContainer, LocalBackendConfig, Name, TrainerClient, TrainerCommand,
        )
        client = TrainerClient(LocalBackendConfig(root={str(root)!r}, stop_on_exit=True))
        client.train(trainer=CustomTrainerContainer(image="i"), options=[Name("orphan"),
                     TrainerCommand(["sleep", "120"])])
        client.wait_for_job_status("orphan", {{"Running"}}, timeout=60, polling_interval=1)
    """)
    job_dir = JobDir(root, "orphan")
    subprocess.run([sys.executable, "-c", script], check=True, timeout=DEADLINE_SECONDS)
    wait_until(lambda: read_json(job_dir.state).get("finished"), "the supervisor to end the job")
    pids = [pod["pid"] for pod in read_json(job_dir.state)["pods"] if pod.get("pid")]
    assert pids and all(is_gone(pid) for pid in pids)
    job = TrainerClient(LocalBackendConfig(root=root)).get_job("orphan")
    assert job.status == constants.TRAINJOB_STOPPED  # its client ended it: stopped, not failed
    assert [step.status for step in job.steps] == ["Failed"], "stopped: not Running any more"


def test_unknown_names_raise_typed_errors(client: TrainerClient) -> None:
    with pytest.raises(JobNotFoundError, match="'missing' not found"):
        client.get_job("missing")
    with pytest.raises(RuntimeNotFoundError, match=r"available runtimes: .*torch-distributed"):
        client.get_runtime("no-such-runtime")


def test_jobs_outlive_the_script_that_submitted_them_until_deleted(tmp_path: Path) -> None:
    root = tmp_path / "jobs"
    script = textwrap.dedent(f"""
        from trainer_sdk import (
            CustomTrainerContainer, LocalBackendConfig, Name, TrainerClient, TrainerCommand,
        )
        client = TrainerClient(LocalBackendConfig(root={str(root)!r}))
        for name, command in (("sleeper", "sleep 120"), ("short", "sleep 2; echo done")):
            client.train(trainer=CustomTrainerContainer(image="i"), options=[Name(name),
                         TrainerCommand(["bash", "-c", command])])
    """)
    subprocess.run([sys.executable, "-c", script], check=True, timeout=DEADLINE_SECONDS)
    later = TrainerClient(LocalBackendConfig(root=root))
    short = later.wait_for_job_status("short", timeout=DEADLINE_SECONDS, polling_interval=1)
    assert short.status == constants.TRAINJOB_COMPLETE
    assert list(later.get_job_logs("short"))[-1] == "done"
    job_dir = JobDir(root, "sleeper")
    wait_until(lambda: all(pod.get("pid") for pod in read_json(job_dir.state)["pods"]), "the pod")
    [pid] = [pod["pid"] for pod in read_json(job_dir.state)["pods"]]
    assert later.get_job("sleeper").status == constants.TRAINJOB_RUNNING
    assert not is_gone(pid)
    later.delete_job("sleeper")
    assert is_gone(pid)


def test_a_job_whose_supervisor_died_is_failed_and_shows_its_pods_real_state(
    client: TrainerClient,
) -> None:
    name = client.train(
        trainer=CustomTrainerContainer(image="i"),
        options=[Name("orphaned"), TrainerCommand(["sleep", "120"])],
    )
    job_dir = JobDir(client.backend.root, name)  # type: ignore[attr-defined]
    wait_until(lambda: all(pod.get("pid") for pod in read_json(job_dir.state)["pods"]), "the pod")
    [pid] = [pod["pid"] for pod in read_json(job_dir.state)["pods"]]
    supervisor = client.backend._supervisors[name]  # type: ignore[attr-defined]
    supervisor.kill()
    supervisor.wait(timeout=DEADLINE_SECONDS)
    # The supervisor's other half ends the pod and records the failure.
    wait_until(lambda: client.get_job(name).status == constants.TRAINJOB_FAILED, "Failed")
    wait_until(lambda: is_gone(pid), "the pod's process group to go")
    wait_until(lambda: read_json(job_dir.state).get("finished"), "the failure to be recorded")
    assert [step.status for step in client.get_job(name).steps] == ["Failed"]
    assert list(client.get_job_logs(name, follow=True)) is not None  # follow ends too
    client.delete_job(name)


def test_stop_keeps_the_job_stopped_with_a_stopped_reason_and_event(client: TrainerClient) -> None:
    name = client.train(
        trainer=CustomTrainerContainer(image="i"),
        options=[Name("stopped"), TrainerCommand(["bash", "-c", "echo started; sleep 120"])],
    )
    job_dir = JobDir(client.backend.root, name)  # type: ignore[attr-defined]
    wait_until(lambda: all(pod.get("pid") for pod in read_json(job_dir.state)["pods"]), "the pod")
    client.stop_job(name)
    job = client.get_job(name)
    assert job.status == constants.TRAINJOB_STOPPED
    assert [event.reason for event in client.get_job_events(name)].count("Stopped") == 1
    with pytest.raises(RuntimeError, match="Stopped"):
        client.wait_for_job_status(name, timeout=5, polling_interval=1)
    conditions = read_json(job_dir.state)["trainjob"]["conditions"]
    assert [c["reason"] for c in conditions if c["type"] == "Failed"] == ["Stopped"]
    assert [step.status for step in job.steps] == ["Failed"]
    assert "started" in list(client.get_job_logs(name))


def test_a_kept_listing_sees_jobs_another_client_creates_stops_deletes_and_makes_again(
    client: TrainerClient, tmp_path: Path
) -> None:
    """``client`` changes the jobs; ``viewer`` lists them, keeping its listing between calls. The
    folder's modification time is set back after each change (as if it were older than
    ``RACY_SECONDS``), so the viewer takes its listing as settled and reads only what can still
    change."""
    root = tmp_path / "jobs"
    viewer = TrainerClient(LocalBackendConfig(root=root))
    sleeping = TrainerCommand(["bash", "-c", "sleep 120"])

    def listed(settle: bool = True) -> dict[str, str]:
        if settle:
            past = time.time_ns() - 10 * 10**9
            os.utime(root, ns=(past, past))
            viewer.list_jobs()  # the listing the next call keeps
        return {job.name: job.status for job in viewer.list_jobs()}

    client.train(trainer=CustomTrainerContainer(image="i"), options=[Name("a"), sleeping])
    wait_until(lambda: viewer.get_job("a").status == constants.TRAINJOB_RUNNING, "a to run")
    assert listed() == {"a": constants.TRAINJOB_RUNNING}
    first = viewer.get_job("a").creation_timestamp

    client.stop_job("a")  # nothing is made or removed in the folder
    assert listed(settle=False) == {"a": constants.TRAINJOB_STOPPED}
    assert listed() == {"a": constants.TRAINJOB_STOPPED}  # ended: kept, not read again

    client.delete_job("a")  # and made again under its name, unseen in between
    client.train(trainer=CustomTrainerContainer(image="i"), options=[Name("a"), sleeping])
    client.train(trainer=CustomTrainerContainer(image="i"), options=[Name("b"), sleeping])
    again = listed()
    assert sorted(again) == ["a", "b"] and constants.TRAINJOB_STOPPED not in again.values()
    [made_again] = [job for job in viewer.list_jobs() if job.name == "a"]
    assert made_again.creation_timestamp > first

    client.delete_job("a")
    client.delete_job("b")
    assert listed() == {}


def suspended_job(client: TrainerClient, name: str, command: list[str]) -> None:
    """Submit a TrainJob that starts suspended; return once it reads Suspended."""
    manifest = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name},
        "spec": {
            "suspend": True,
            "runtimeRef": {"name": "torch-distributed"},
            "trainer": {"command": command},
        },
    }
    client.submit(manifest)
    client.wait_for_job_status(name, {constants.TRAINJOB_SUSPENDED}, timeout=DEADLINE_SECONDS)


def test_a_resumed_job_runs_the_plan_its_submit_compiled(
    client: TrainerClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The supervisor decided again whether pods run in namespaces: a job submitted without
    them ran in them once resumed by a client that had not turned them off."""
    if not isolation.kernel_allows():
        pytest.skip("this kernel refuses private namespaces: both decisions would be the same")
    monkeypatch.setenv(isolation.DISABLE_ENV, "0")
    suspended_job(client, "planned", ["hostname"])
    compiled = plan.from_document(read_json(JobDir(tmp_path / "jobs", "planned").plan))
    assert not compiled.isolated
    monkeypatch.delenv(isolation.DISABLE_ENV)
    client.resume_job("planned")
    job = client.wait_for_job_status("planned", timeout=DEADLINE_SECONDS)
    assert job.status == constants.TRAINJOB_COMPLETE
    lines = list(client.get_job_logs("planned"))
    assert socket.gethostname() in lines and "planned-node-0-0" not in lines, lines


def test_a_job_without_a_plan_is_not_resumed_and_says_why(
    client: TrainerClient, tmp_path: Path
) -> None:
    """A job directory from before plans (no plan.json) made the resumed supervisor crash."""
    suspended_job(client, "older", ["true"])
    JobDir(tmp_path / "jobs", "older").plan.unlink()
    with pytest.raises(TrainerError, match=r"earlier trainer-sdk and has no plan\.json"):
        client.resume_job("older")
    assert client.get_job("older").status == constants.TRAINJOB_SUSPENDED


def test_reading_jobs_loads_no_api_models(tmp_path: Path) -> None:
    """``trainer list`` and the UI read jobs: the TrainJob models (a third of a second of
    imports) load only where a job is created."""
    code = (
        "import sys; from pathlib import Path; "
        "from trainer_sdk import LocalBackendConfig, TrainerClient; "
        f"client = TrainerClient(LocalBackendConfig(root=Path({str(tmp_path)!r}))); "
        "assert client.list_jobs() == []; "
        "print(sorted(m for m in ('trainer_api', 'trainer_runtime.lifecycle') if m in sys.modules))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    assert loaded.strip() == "[]"


def test_a_submit_admits_the_job_once(
    client: TrainerClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One submit of a 2-node job ran apply_defaults 4 times, trainer_api.validate 3 times,
    runtime_info twice and the plugins' validation twice (issue 34)."""
    import trainer_api
    import trainer_runtime.admission
    import trainer_runtime.framework

    calls = count_calls(
        monkeypatch,
        (trainer_api, "apply_defaults"),
        (trainer_api, "validate"),
        (trainer_runtime.admission, "runtime_info"),
        (trainer_runtime.framework, "field_errors"),
    )
    client.backend.get_runtime_manifest("torch-distributed")  # the built-ins load once, before
    client.submit(
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": "counted"},
            "spec": {
                "suspend": True,  # its supervisor starts nothing
                "runtimeRef": {"name": "torch-distributed"},
                "trainer": {"numNodes": 2, "command": ["true"]},
            },
        }
    )
    assert calls == {"apply_defaults": 2, "validate": 1, "runtime_info": 1, "field_errors": 1}
