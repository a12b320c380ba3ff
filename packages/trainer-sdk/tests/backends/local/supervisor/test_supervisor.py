"""Pieces of the supervisor: interpreter shims (its package cache: test_packages.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from trainer_sdk.backends.local.supervisor.supervisor import write_shims

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
