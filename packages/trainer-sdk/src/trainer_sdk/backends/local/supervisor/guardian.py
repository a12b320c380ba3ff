"""The supervisor's two processes, so that killing either one still ends the whole job.

The process the client starts (the *guardian*, whose PID ``supervisor.pid`` records) becomes a
child subreaper and forks the process that runs the job (the *supervisor* proper), which is a
subreaper too: whatever the pods start stays below one of them.

- ``kill -9`` of the guardian: the supervisor gets SIGTERM (``PR_SET_PDEATHSIG``), ends every
  process of the job and records it as Failed (``SupervisorLost``).
- ``kill -9`` of the supervisor: its orphans become the guardian's; the guardian ends everything
  below it or carrying the job's token (SIGTERM, SIGKILL after the grace period) and records the
  job as Failed (``SupervisorLost``).
- SIGTERM to the guardian (``delete_job``) is passed on to the supervisor, which ends the job.

Where cgroup v2 is writable, the supervisor runs in a cgroup of the job's own (``cgroups``) and
the guardian outside it: whatever is left inside when the supervisor has gone is ended too.

Both hold the job's ``supervisor.lock`` (inherited across the fork) until they exit, so a reader
that finds the lock free knows that nobody will finish the job any more.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from trainer_sdk.backends.local.jobdir import JobDir, read_json, write_json
from trainer_sdk.backends.local.supervisor import cgroups, processes

__all__ = ["SUPERVISOR_LOST", "fork_supervisor", "record_failure"]

SUPERVISOR_LOST = "SupervisorLost"
GRACE_SECONDS = 5.0
_PR_SET_PDEATHSIG = 1


def record_failure(state: dict[str, Any], reason: str, message: str) -> None:
    """Mark the job in ``state`` (a ``state.json`` document) Failed and finished; pods that were
    still running or pending are Failed too."""
    condition = {
        "type": "Failed",
        "status": "True",
        "reason": reason,
        "message": message,
        "lastTransitionTime": datetime.now(timezone.utc).isoformat(),
    }
    state["trainjob"] = {**(state.get("trainjob") or {}), "conditions": [condition]}
    for pod in state.get("pods") or []:
        if pod.get("phase") in ("Running", "Pending"):
            pod["phase"] = "Failed"
    state["finished"] = True


def fork_supervisor(job_dir: JobDir, token: str) -> int | None:
    """Fork; in the supervisor return the guardian's PID, in the guardian run it and return
    None once the supervisor has gone and the job is cleaned up. Call it before any thread.

    Where cgroup v2 is writable the supervisor runs in a new cgroup, recorded as ``cgroup`` in
    ``state.json``."""
    guardian = os.getpid()
    processes.become_subreaper()
    cgroup = cgroups.create(job_dir.name)
    if cgroup is not None:
        state = read_json(job_dir.state)
        state["cgroup"] = str(cgroup)
        write_json(job_dir.state, state)
    child = os.fork()
    if child == 0:
        processes.become_subreaper()  # not inherited across fork
        if cgroup is not None:
            cgroups.enter(cgroup)
        _die_with(guardian)
        return guardian
    try:
        _guard(child, job_dir, token, cgroup)
    finally:
        if cgroup is not None:
            cgroups.remove(cgroup)
    return None


def _die_with(parent: int) -> None:
    """SIGTERM this process when ``parent`` dies (also if it already has)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the guardian's sweep is all there is
        return
    if os.getppid() != parent:
        os.kill(os.getpid(), signal.SIGTERM)


def _guard(supervisor: int, job_dir: JobDir, token: str, cgroup: Path | None) -> None:
    signal.signal(signal.SIGTERM, lambda signum, frame: os.kill(supervisor, signal.SIGTERM))
    _, status = os.waitpid(supervisor, 0)
    me = processes.ProcessIdentity.of(os.getpid())
    left = processes.terminate(lambda: _reaped_then_found(me, token, cgroup), GRACE_SECONDS)
    processes.reap_adopted()
    state = read_json(job_dir.state)
    if state.get("finished"):
        return
    how = (
        f"was killed by signal {os.WTERMSIG(status)}"
        if os.WIFSIGNALED(status)
        else f"exited with code {os.waitstatus_to_exitcode(status)}"
    )
    message = f"the job's supervisor (pid {supervisor}) {how} before the job ended"
    if left:
        message += f"; still alive: {', '.join(str(process.pid) for process in left)}"
    record_failure(state, SUPERVISOR_LOST, message)
    write_json(job_dir.state, state)
    print(f"[trainer-sdk guardian] {message}", file=sys.stderr, flush=True)


def _reaped_then_found(
    me: processes.ProcessIdentity | None, token: str, cgroup: Path | None
) -> list[processes.ProcessIdentity]:
    processes.reap_adopted()
    return processes.find([me] if me else [], token, cgroup=cgroup)
