"""Suspend, resume and preemption of a local job, as a cluster shows them.

- ``spec.suspend: true`` on a job that runs (``set_suspended``) writes the flag into the job's
  ``trainjob.json`` and ends its supervisor; the supervisor ends the pods with SIGTERM, so ranks
  using ``trainer_sdk.checkpoint`` save at the next step and exit, and the job reads
  ``Suspended`` (reason ``Suspended``) with an event. ``spec.suspend: false`` starts a new
  supervisor on the same job directory: a new attempt (``TRAINER_RESTART_ATTEMPT`` goes on
  counting), which resumes from the latest checkpoint.
- A preemption: SIGTERM to the job from outside (its supervisor or guardian, e.g. the system
  shutting down), or a rank ending by SIGTERM once the JobSet has no restart left. The job reads
  ``Suspended`` with reason ``Preempted`` and the message why, not Failed: it can be resumed the
  same way. A rank that ends by SIGTERM while restarts are left restarts the JobSet, as any
  failure (the cluster's ``DisruptionTarget`` rule has no local counterpart: nothing here tells
  an eviction from a user's ``kill``).

The supervisor and runner call the small functions here at their hooks; ``set_suspended`` is the
local backend's ``suspend_job``.
"""

from __future__ import annotations

import contextlib
import copy
import os
import subprocess
import time
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Final

from trainer_runtime import exit_codes
from trainer_runtime.conditions import set_condition

from trainer_sdk import constants
from trainer_sdk.backends.local.jobdir import JobDir, hold_lock, lock_held, read_json, write_json
from trainer_sdk.errors import TrainerError

if TYPE_CHECKING:
    from trainer_sdk.backends.local.backend import LocalBackend

__all__ = [
    "PREEMPTED",
    "RESTARTING_REASONS",
    "SUSPENDED",
    "attempt_offset",
    "final_condition",
    "on_report",
    "pod_failure_reason",
    "set_suspended",
    "termination",
]

SUSPENDED: Final = "Suspended"
PREEMPTED: Final = "Preempted"
FAILED_JOBS: Final = "FailedJobs"
POD_FAILURE_POLICY: Final = "PodFailurePolicy"  # the reason a cluster's Job gets from such a rule
# The attempt reasons after which the JobSet restarts while maxRestarts allows.
RESTARTING_REASONS: Final = (FAILED_JOBS, PREEMPTED)
# state.json: how many attempts earlier supervisors of the job ran (resumes go on counting).
ATTEMPT_OFFSET_KEY: Final = "attemptOffset"
EXIT_WAIT_SECONDS: Final = 30.0  # for a suspended job's supervisor to finish exiting
LOCK_CHECK_SECONDS: Final = 0.05


def _now() -> datetime:
    return datetime.now(timezone.utc)


# -- the runner's hooks -----------------------------------------------------------------------
def pod_failure_reason(code: int) -> str:
    """Why an attempt ended whose pod exited with ``code``, by the exit-code policy both backends
    apply (``trainer_runtime.exit_codes``): ``Preempted`` for SIGTERM (killed by it, or 143: a
    checkpointing rank that saved and exited), ``PodFailurePolicy`` for a command that cannot
    run (no restart), else ``FailedJobs``."""
    action = exit_codes.exit_action(code)
    if action is exit_codes.ExitAction.PREEMPTED:
        return PREEMPTED
    return POD_FAILURE_POLICY if action is exit_codes.ExitAction.FAIL else FAILED_JOBS


def final_condition(kind: str, reason: str, message: str) -> tuple[str, str, str]:
    """The JobSet condition a run ends with: a preempted one reads Suspended, not Failed."""
    if kind == "Failed" and reason == PREEMPTED:
        return SUSPENDED, PREEMPTED, f"{message}; resume it to continue from its checkpoint"
    if kind == "Failed" and reason == POD_FAILURE_POLICY:
        codes = ", ".join(map(str, exit_codes.FAIL_EXIT_CODES))
        return kind, reason, f"{message}; not restarted: exit codes {codes} mean it cannot run"
    return kind, reason, message


def attempt_offset(state: dict[str, Any]) -> int:
    """The first attempt number of this supervisor's run (0 unless the job was resumed)."""
    return int(state.get(ATTEMPT_OFFSET_KEY) or 0)


# -- the supervisor's hooks -------------------------------------------------------------------
def suspend_requested(job_dir: JobDir) -> bool:
    """Whether the job's ``spec.suspend`` is true now (``set_suspended`` writes it)."""
    return bool((read_json(job_dir.trainjob).get("spec") or {}).get("suspend"))


def termination(job_dir: JobDir) -> tuple[str, str, str]:
    """The JobSet condition of a supervisor that got SIGTERM through its guardian and was not
    stopped: suspended, or else preempted (``trainer delete`` or the system ending it)."""
    if suspend_requested(job_dir):
        return SUSPENDED, SUSPENDED, "spec.suspend is true: the pods were ended with SIGTERM"
    return (
        SUSPENDED,
        PREEMPTED,
        "the job got SIGTERM from outside: its pods were ended with SIGTERM (checkpointing "
        "ranks save first)",
    )


def _jobset_condition(status: dict[str, Any]) -> dict[str, Any] | None:
    for condition in status.get("conditions") or []:
        if condition.get("type") == SUSPENDED and condition.get("status") == "True":
            return dict(condition)
    return None


def on_report(state: dict[str, Any], status: dict[str, Any], name: str) -> None:
    """After the supervisor derived the TrainJob status from the JobSet ``status``: a JobSet
    that ended Suspended makes the TrainJob read Suspended with that reason, and one event
    (``Suspended`` or ``Preempted``) per attempt says so."""
    condition = _jobset_condition(status)
    if condition is None:
        return
    reason, message = str(condition.get("reason")), str(condition.get("message"))
    trainjob = copy.deepcopy(state.get("trainjob") or {})
    set_condition(trainjob.setdefault("conditions", []), SUSPENDED, True, reason, message, _now())
    state["trainjob"] = trainjob
    attempt = attempt_offset(state) + int(status.get("restarts") or 0)
    events = state.setdefault("events", [])
    if not any(e["reason"] == reason and e.get("attempt") == attempt for e in events):
        events.append(_event(name, reason, message, attempt))


def _event(name: str, reason: str, message: str, attempt: int) -> dict[str, Any]:
    return {
        "kind": "TrainJob",
        "object": name,
        "reason": reason,
        "time": _now().isoformat(),
        "message": message,
        "attempt": attempt,
    }


# -- the backend's suspend_job ----------------------------------------------------------------
def set_suspended(backend: LocalBackend, name: str, suspend: bool) -> None:
    """Set the job's ``spec.suspend``: True ends a job that has not ended (SIGTERM), False starts
    a suspended one again. Either is a no-op when the job already is that way."""
    job_dir = backend._job_dir(name)
    job = backend._read(job_dir)
    if job.status in (constants.TRAINJOB_COMPLETE, constants.TRAINJOB_FAILED):
        action = "suspended" if suspend else "resumed"
        raise TrainerError(f"TrainJob {name!r} has ended ({job.status}): it cannot be {action}")
    if suspend:
        if job.status != constants.TRAINJOB_SUSPENDED:
            _write_suspend(job_dir, True)
            backend._stop(job_dir)
        return
    if job.status == constants.TRAINJOB_SUSPENDED:
        _resume(backend, job_dir)


def _write_suspend(job_dir: JobDir, suspend: bool) -> None:
    for path in (job_dir.trainjob, job_dir.jobset):
        document = read_json(path)
        spec = document.setdefault("spec", {})
        if suspend:
            spec["suspend"] = True
        else:
            spec.pop("suspend", None)
        write_json(path, document)


def _resume(backend: LocalBackend, job_dir: JobDir) -> None:
    """A new supervisor for the suspended job: the next attempt number, pods Pending again. It
    runs the plan the job's submit compiled (``plan.json``)."""
    if not job_dir.plan.is_file():
        raise TrainerError(
            f"TrainJob {job_dir.name!r} was submitted by an earlier trainer-sdk and has no "
            f"{job_dir.plan.name} to run; submit it again (its checkpoints are kept)"
        )
    # Its supervisor may still be exiting (never signalled: it would record the job Failed).
    previous = backend._supervisors.pop(job_dir.name, None)
    deadline = time.monotonic() + EXIT_WAIT_SECONDS
    if previous is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):  # then the lock says so below
            previous.wait(timeout=EXIT_WAIT_SECONDS)
    while lock_held(job_dir.supervisor_lock) and time.monotonic() < deadline:
        time.sleep(LOCK_CHECK_SECONDS)
    try:
        lock = hold_lock(job_dir.supervisor_lock)
    except BlockingIOError:
        raise TrainerError(
            f"TrainJob {job_dir.name!r}: its supervisor has not ended in {EXIT_WAIT_SECONDS} s"
        ) from None
    try:
        _write_suspend(job_dir, False)
        state = read_json(job_dir.state)
        restarts = int((state.get("jobset") or {}).get("restarts") or 0)
        state[ATTEMPT_OFFSET_KEY] = attempt_offset(state) + restarts + 1
        for pod in state.get("pods", []):
            pod.update(phase=constants.POD_PENDING, pid=None, exit_code=None)
        name = str(read_json(job_dir.trainjob)["metadata"]["name"])
        message = f"spec.suspend is false: attempt {state[ATTEMPT_OFFSET_KEY]} starts"
        state.setdefault("events", []).append(
            _event(name, "Resumed", message, state[ATTEMPT_OFFSET_KEY])
        )
        state["finished"] = False
        write_json(job_dir.state, state)
        backend._start_supervisor(job_dir, lock)
    finally:
        os.close(lock)
