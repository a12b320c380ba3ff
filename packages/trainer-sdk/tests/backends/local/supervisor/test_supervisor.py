"""Pieces of the supervisor: interpreter shims (its package cache: test_packages.py)."""

from __future__ import annotations

import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest
from call_counts import count_calls
from trainer_sdk.backends.local import plan
from trainer_sdk.backends.local.jobdir import JobDir
from trainer_sdk.backends.local.submit import planning
from trainer_sdk.backends.local.submit.compiler import compile_plan
from trainer_sdk.backends.local.supervisor.runner import PodState
from trainer_sdk.backends.local.supervisor.supervisor import Supervisor, write_shims
from trainer_sdk.manifests import admission
from trainer_sdk.private_files import read_json, write_json

COMPILER = "trainer_sdk.backends.local.submit.compiler"


def test_shims_run_the_given_interpreter(tmp_path: Path) -> None:
    write_shims(tmp_path, sys.executable)
    result = subprocess.run(
        [str(tmp_path / "python"), "-c", "import sys; print(sys.executable)"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert result.stdout.strip() == sys.executable


def test_the_supervisor_starts_without_the_api_models() -> None:
    """Every local job starts a supervisor; the TrainJob models (pydantic schemas, a third of a
    second) load only when it first derives the job's status, not before the pods start, and
    the plan it runs was compiled at submit."""
    unwanted = ("trainer_api", "trainer_runtime.lifecycle", "torch", "pydantic")
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, trainer_sdk.backends.local.supervisor.supervisor; "
            f"print(sorted(m for m in {(*unwanted, COMPILER)!r} if m in sys.modules))",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    assert loaded.strip() == "[]"


def test_sigterm_during_a_status_report_ends_the_job_once_the_report_is_written() -> None:
    """SIGTERM's exception, raised inside a report, met pydantic building the API models' schemas
    (their first import) and became a SchemaError: a job whose guardian was killed read
    SupervisorFailed instead of SupervisorLost (found by the soak). A report is not interrupted:
    the termination is raised when it ends, and at once elsewhere."""
    import signal

    from trainer_sdk.backends.local.supervisor.supervisor import _TerminatedError, _Termination

    previous = signal.getsignal(signal.SIGTERM)
    steps = []
    try:
        termination = _Termination()
        with pytest.raises(_TerminatedError), termination.held():
            termination.handle(signal.SIGTERM, None)
            steps.append("the report went on")  # what an exception here would have cut short
        assert steps == ["the report went on"]
        with pytest.raises(_TerminatedError):
            _Termination().handle(signal.SIGTERM, None)
    finally:
        signal.signal(signal.SIGTERM, previous)


NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


def stored_job(root: Path) -> JobDir:
    """A two-node job's files as its submit stores them (no supervisor started)."""
    manifest = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "job", "namespace": "default"},
        "spec": {
            "runtimeRef": {"name": "torch-distributed"},
            "trainer": {"numNodes": 2, "command": ["true"]},
        },
    }
    runtime = planning.builtin_runtime_manifests()["torch-distributed"]
    planned = planning.plan_trainjob(
        admission.parse_trainjob(manifest), admission.parse_runtime(runtime), NOW
    )
    job_dir = JobDir(root, "job")
    job_dir.path.mkdir()
    local_plan = compile_plan(
        planned.jobset, planned.others, job_dir, isolated=False, gpus=0, job_env={}
    )
    write_json(job_dir.trainjob, planned.trainjob)
    write_json(job_dir.runtime, planned.runtime)
    write_json(job_dir.jobset, planned.jobset)
    write_json(job_dir.plan, plan.to_document(local_plan))
    state = {"token": "t", "objects": planned.others, "pods": [], "events": [], "finished": False}
    write_json(job_dir.state, state)
    return job_dir


def test_status_reports_parse_and_admit_the_job_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each report fed the un-defaulted job and the runtime back through parsing, defaulting,
    validation and the runtime info: now the first report admits the stored job once and every
    later one only builds."""
    import trainer_api
    import trainer_runtime.admission

    job_dir = stored_job(tmp_path)
    supervisor = Supervisor(job_dir, sys.executable)
    calls = count_calls(
        monkeypatch,
        (trainer_api, "parse"),
        (trainer_api, "apply_defaults"),
        (trainer_api, "validate"),
        (trainer_runtime.admission, "runtime_info"),
    )
    pods = [PodState(f"job-node-0-{index}", f"node-{index}", "node", 0) for index in range(2)]
    running = {"restarts": 0, "replicatedJobsStatus": [{"name": "node", "active": 1}]}
    supervisor.report(running, pods)
    assert calls == {"parse": 2, "apply_defaults": 2, "validate": 1, "runtime_info": 1}
    calls.clear()
    for pod in pods:
        pod.phase = "Succeeded"
    done = {
        "restarts": 0,
        "replicatedJobsStatus": [{"name": "node", "succeeded": 1}],
        "conditions": [
            {
                "type": "Completed",
                "status": "True",
                "reason": "AllJobsCompleted",
                "message": "the JobSet completed",
                "lastTransitionTime": NOW.isoformat(),
            }
        ],
    }
    supervisor.report(running, pods)
    supervisor.report(done, pods)
    assert calls == {}
    conditions = read_json(job_dir.state)["trainjob"]["conditions"]
    assert [(c["type"], c["status"]) for c in conditions] == [("Complete", "True")]
