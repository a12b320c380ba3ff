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

The runner and the supervisor call the small decisions here; the local backend's
``suspend_job`` writes ``spec.suspend`` and starts or ends the supervisor; ``build`` turns what
they report into the job's status (``facts``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from trainer_runtime import exit_codes

from trainer_sdk.backends.local import facts
from trainer_sdk.backends.local.jobdir import JobDir
from trainer_sdk.private_files import read_json

__all__ = [
    "ATTEMPT_OFFSET_KEY",
    "PREEMPTED",
    "RESTARTING_REASONS",
    "SUSPENDED",
    "attempt_offset",
    "final_condition",
    "pod_failure_reason",
    "suspend_requested",
    "termination",
]

SUSPENDED: Final = facts.SUSPENDED
PREEMPTED: Final = facts.PREEMPTED
FAILED_JOBS: Final = "FailedJobs"
POD_FAILURE_POLICY: Final = "PodFailurePolicy"  # the reason a cluster's Job gets from such a rule
# The attempt reasons after which the JobSet restarts while maxRestarts allows.
RESTARTING_REASONS: Final = (FAILED_JOBS, PREEMPTED)
# state.json: how many attempts earlier supervisors of the job ran (resumes go on counting).
ATTEMPT_OFFSET_KEY: Final = "attemptOffset"


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


def attempt_offset(state: Mapping[str, Any]) -> int:
    """The first attempt number of this supervisor's run (0 unless the job was resumed)."""
    return int(state.get(ATTEMPT_OFFSET_KEY) or 0)


# -- the supervisor's hooks -------------------------------------------------------------------
def suspend_requested(job_dir: JobDir) -> bool:
    """Whether the job's ``spec.suspend`` is true now (the backend's ``suspend_job`` writes it)."""
    return bool((read_json(job_dir.trainjob).get("spec") or {}).get("suspend"))


def termination(job_dir: JobDir) -> tuple[str, str, str]:
    """The fact (kind, reason, message) of a supervisor that got SIGTERM through its guardian
    and was not stopped: suspended, or else preempted (``trainer delete`` or the system ending
    it)."""
    if suspend_requested(job_dir):
        return SUSPENDED, SUSPENDED, "spec.suspend is true: the pods were ended with SIGTERM"
    return (
        SUSPENDED,
        PREEMPTED,
        "the job got SIGTERM from outside: its pods were ended with SIGTERM (checkpointing "
        "ranks save first)",
    )
