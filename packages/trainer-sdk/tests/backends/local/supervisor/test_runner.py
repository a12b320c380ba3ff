"""The JobSet runner with real processes: order, restarts, success policy, deadline, suspend."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from trainer_sdk.backends.local.jobdir import JobDir
from trainer_sdk.backends.local.plan import LateValue
from trainer_sdk.backends.local.submit.compiler import compile_plan
from trainer_sdk.backends.local.supervisor import isolation, processes
from trainer_sdk.backends.local.supervisor.runner import JobSetRunner, PodState

from ..submit.test_pods import jobset, replicated_job

COMPLETION_INDEX_FIELD = "metadata.annotations['batch.kubernetes.io/job-completion-index']"

pytestmark = pytest.mark.e2e


def runner_for(
    manifest: dict[str, Any],
    job_dir: JobDir,
    env: dict[str, str],
    report: Callable[[dict[str, Any], list[PodState]], None] = lambda status, pods: None,
    deadline: float | None = None,
) -> JobSetRunner:
    """A runner of ``manifest``'s plan, compiled as the backend compiles it (no GPUs)."""
    plan = compile_plan(
        manifest,
        (),
        job_dir,
        isolated=isolation.available(),
        gpus=0,
        job_env=env,
        active_deadline_seconds=deadline,
    )
    return JobSetRunner(plan, job_dir, env, {LateValue.MASTER_PORT: "41999"}, report)


def run(
    manifest: dict[str, Any], tmp_path: Path, deadline: float | None = None
) -> tuple[dict[str, Any], list[list[PodState]], JobDir]:
    job_dir = JobDir(tmp_path, "job")
    reports: list[list[PodState]] = []
    runner = runner_for(
        manifest,
        job_dir,
        {**os.environ, "SHARED": str(tmp_path)},
        lambda status, pods: reports.append([PodState(**vars(pod)) for pod in pods]),
        deadline,
    )
    suspended = bool(manifest["spec"].get("suspend"))
    return runner.run(suspended), reports, job_dir


def condition(status: dict[str, Any]) -> tuple[str, str]:
    [only] = status["conditions"]
    return only["type"], only["reason"]


def test_depends_on_waits_for_completion_and_all_jobs_complete(tmp_path: Path) -> None:
    manifest = jobset(
        replicated_job(
            "node",
            ["bash", "-c", 'test -f "$SHARED/ready" && echo "node $PET_NODE_RANK"'],
            parallelism=2,
            depends_on="dataset-initializer",
            env=[
                {
                    "name": "PET_NODE_RANK",
                    "valueFrom": {"fieldRef": {"fieldPath": COMPLETION_INDEX_FIELD}},
                }
            ],
        ),
        replicated_job("dataset-initializer", ["bash", "-c", 'sleep 0.2; touch "$SHARED/ready"']),
    )
    status, _, job_dir = run(manifest, tmp_path)
    assert condition(status) == ("Completed", "AllJobsCompleted")
    assert [job["succeeded"] for job in status["replicatedJobsStatus"]] == [1, 1]
    assert job_dir.log("node-1").read_text().strip().endswith("node 1")


def test_failed_pod_restarts_the_jobset_within_max_restarts(tmp_path: Path) -> None:
    script = 'if [ -f "$SHARED/tried" ]; then echo second; else touch "$SHARED/tried"; exit 3; fi'
    status, _, job_dir = run(
        jobset(replicated_job("node", ["bash", "-c", script]), failurePolicy={"maxRestarts": 1}),
        tmp_path,
    )
    assert condition(status) == ("Completed", "AllJobsCompleted")
    assert status["restarts"] == 1
    assert "--- restart 1 ---\n" in job_dir.log("node-0").read_text()


def test_failure_past_max_restarts_fails_with_pod_and_exit_code(tmp_path: Path) -> None:
    status, reports, _ = run(
        jobset(
            replicated_job("node", ["bash", "-c", "exit 7"], parallelism=2),
            failurePolicy={"maxRestarts": 1},
        ),
        tmp_path,
    )
    assert condition(status) == ("Failed", "FailedJobs")
    assert status["restarts"] == 1
    assert "exited with code 7" in status["conditions"][0]["message"]
    assert "reached maxRestarts 1" in status["conditions"][0]["message"]
    assert any(pod.phase == "Failed" and pod.exit_code == 7 for pod in reports[-1])


@pytest.mark.parametrize(
    ("script", "max_restarts", "message"),
    [
        pytest.param(
            'echo "mpi-launch: error: ranks never started" > termination-log; exit 3',
            0,
            "pod job-node-0-0 (step node-0) exited with code 3: "
            "mpi-launch: error: ranks never started",
            id="termination-log-in-the-message",
        ),
        pytest.param(
            'if [ -e "$SHARED/once" ]; then exit 6; fi; touch "$SHARED/once"; '
            "echo stale > termination-log; exit 5",
            1,
            "pod job-node-0-0 (step node-0) exited with code 6; reached maxRestarts 1",
            id="a-restart-drops-the-earlier-log",
        ),
    ],
)
def test_failure_message_carries_the_pods_termination_log(
    script: str, max_restarts: int, message: str, tmp_path: Path
) -> None:
    """As a kubelet reads terminationMessagePath: here ``termination-log`` in the pod dir."""
    manifest = jobset(
        replicated_job("node", ["bash", "-c", script]),
        failurePolicy={"maxRestarts": max_restarts},
    )
    status, _, _ = run(manifest, tmp_path)
    assert status["conditions"][0]["message"] == message


@pytest.mark.parametrize(
    ("script", "restarts", "reason"),
    [
        pytest.param("exit 1", 1, "FailedJobs", id="python-error-restarts"),
        pytest.param("kill -9 $$", 1, "FailedJobs", id="killed-restarts"),
        pytest.param("no-such-command-5e2c", 0, "PodFailurePolicy", id="not-found-fails-at-once"),
        pytest.param("exit 126", 0, "PodFailurePolicy", id="not-executable-fails-at-once"),
    ],
)
def test_the_exit_code_policy_decides_restarts_as_in_a_cluster(
    script: str, restarts: int, reason: str, tmp_path: Path
) -> None:
    """The same rules as the pod failure policy a cluster gets (trainer_runtime.exit_codes)."""
    manifest = jobset(
        replicated_job("node", ["bash", "-c", script]), failurePolicy={"maxRestarts": 1}
    )
    status, _, _ = run(manifest, tmp_path)
    assert condition(status) == ("Failed", reason)
    assert status["restarts"] == restarts


def test_success_policy_any_ends_the_remaining_pods(tmp_path: Path) -> None:
    manifest = jobset(
        replicated_job("driver", ["true"]),
        replicated_job("worker", ["sleep", "60"]),
        successPolicy={"operator": "Any", "targetReplicatedJobs": ["driver"]},
    )
    status, reports, _ = run(manifest, tmp_path)
    assert condition(status) == ("Completed", "AllJobsCompleted")
    worker = next(pod for pod in reports[-1] if pod.replicated_job == "worker")
    with pytest.raises(ProcessLookupError):
        os.killpg(worker.pid or 0, 0)


def test_active_deadline_ends_the_pods_and_fails(tmp_path: Path) -> None:
    status, reports, _ = run(
        jobset(replicated_job("node", ["sleep", "60"])), tmp_path, deadline=0.3
    )
    assert condition(status) == ("Failed", "DeadlineExceeded")
    with pytest.raises(ProcessLookupError):
        os.killpg(reports[-1][0].pid or 0, 0)


def test_suspended_jobset_starts_nothing(tmp_path: Path) -> None:
    status, reports, job_dir = run(jobset(replicated_job("node", ["true"]), suspend=True), tmp_path)
    assert condition(status) == ("Suspended", "SuspendedJobs")
    assert not job_dir.log("node-0").exists()
    assert reports[-1] == []


@pytest.mark.parametrize(
    ("container", "reason"),
    [
        pytest.param({"command": ["no-such-command-7b1d"]}, "FileNotFoundError", id="missing"),
        pytest.param(
            {"command": ["true"], "env": [{"name": "A=B", "value": "1"}]},
            "ValueError: illegal environment variable name",
            id="equals-in-env-name",
        ),
        pytest.param(
            {"command": ["true"], "env": [{"name": "A", "value": "x\0y"}]},
            "ValueError: embedded null byte",
            id="nul-in-env-value",
        ),
        pytest.param({"command": ["echo", "x\0y"]}, "embedded null byte", id="nul-in-argument"),
        pytest.param(
            {"command": ["echo", "x" * 200_000]}, "at most 128 KiB", id="argument-over-128KiB"
        ),
    ],
)
def test_a_pod_that_cannot_start_fails_the_attempt_with_the_reason(
    container: dict[str, Any], reason: str, tmp_path: Path
) -> None:
    job = replicated_job("node", container["command"], env=container.get("env"))
    status, reports, job_dir = run(jobset(job, failurePolicy={"maxRestarts": 1}), tmp_path)
    assert condition(status) == ("Failed", "PodFailurePolicy")  # 128: not restarted
    assert status["restarts"] == 0
    message = status["conditions"][0]["message"]
    assert message.startswith("pod job-node-0-0 (step node-0) could not start: ")
    assert reason in message and message.endswith("mean it cannot run")
    assert reports[-1][0].phase == "Failed" and reports[-1][0].exit_code == 128
    assert reason in job_dir.log("node-0").read_text()


def test_ending_an_attempt_ends_what_its_pods_left_behind(tmp_path: Path) -> None:
    """A pod that exits leaving a SIGTERM-ignoring child in a session of its own, which the
    success of the JobSet must still end."""
    script = 'setsid bash -c \'trap "" TERM; echo $$ > "$SHARED/left"; exec sleep 300\' &'
    status, _, _ = run(
        jobset(
            replicated_job(
                "node",
                ["bash", "-c", f'{script} while [ ! -s "$SHARED/left" ]; do sleep 0.05; done'],
            )
        ),
        tmp_path,
    )
    assert condition(status) == ("Completed", "AllJobsCompleted")
    pid = int((tmp_path / "left").read_text())
    assert (
        processes.ProcessIdentity.of(pid) is None
        or "sleep" not in Path(f"/proc/{pid}/cmdline").read_text()
    )
