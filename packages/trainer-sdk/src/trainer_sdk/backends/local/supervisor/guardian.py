"""The supervisor's two processes, so that killing either one still ends the whole job.

The process the client starts (the *guardian*, whose PID ``supervisor.pid`` records) becomes a
child subreaper and forks the process that runs the job (the *supervisor* proper), which is a
subreaper too: whatever the pods start stays below one of them.

- ``kill -9`` of the guardian: the supervisor gets SIGTERM (``PR_SET_PDEATHSIG``), ends every
  process of the job and records the fact ``SupervisorLost``, from which ``build`` derives
  Failed (``facts``).
- ``kill -9`` of the supervisor: its orphans become the guardian's; the guardian ends everything
  below it or carrying the job's token (SIGTERM, SIGKILL after the grace period), records the
  fact ``SupervisorLost`` and the status ``build`` derives from it, as the supervisor would have.
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

from trainer_sdk.backends.local import facts
from trainer_sdk.backends.local.jobdir import JobDir
from trainer_sdk.backends.local.supervisor import cgroups, processes
from trainer_sdk.private_files import read_json, write_json

__all__ = ["fork_supervisor"]

GRACE_SECONDS = 5.0
_PR_SET_PDEATHSIG = 1


def fork_supervisor(job_dir: JobDir, token: str) -> int | None:
    """Fork; in the supervisor return the guardian's PID (SIGTERM still blocked: the supervisor
    unblocks it once its handler is in place), in the guardian run it and return None once the
    supervisor has gone and the job is cleaned up. Call it before any thread.

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
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})  # one sent before: passed on
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
    print(f"[trainer-sdk guardian] {message}", file=sys.stderr, flush=True)
    facts.record(state, facts.FAILED, facts.SUPERVISOR_LOST, message)
    try:
        write_json(job_dir.state, state)  # first: a reader derives the status if we die too
    except OSError as error:  # a full disk: the note allocated at submit takes the fact
        if not facts.disk_full(error):
            raise
        facts.write_note(job_dir.end_note, facts.DISK_FULL, facts.disk_full_message(job_dir.root))
        return
    admission = facts.admit_stored(
        read_json(job_dir.trainjob), read_json(job_dir.runtime), state.get("trainjob")
    )
    derived = facts.derive_status(
        admission, read_json(job_dir.jobset), state, datetime.now(timezone.utc)
    )
    if derived is not None:
        state["trainjob"] = derived.to_dict()
    state["finished"] = True
    write_json(job_dir.state, state)


def _reaped_then_found(
    me: processes.ProcessIdentity | None, token: str, cgroup: Path | None
) -> list[processes.ProcessIdentity]:
    processes.reap_adopted()
    return processes.find([me] if me else [], token, cgroup=cgroup)
