"""A job's last line of defence: a process forked from the supervisor that outlives it.

The supervisor cannot clean up after a ``kill -9``. Its guardian waits on a pipe whose only
writer is the supervisor: a byte means the supervisor finished the job itself; end of file
without one means the supervisor died. Then the guardian ends every process that carries the
job's token (SIGTERM, SIGKILL after the grace period) and records the job as Failed with
``SupervisorLost``. It holds the job's ``supervisor.lock`` (inherited across the fork) until it
has done so, so a reader that finds the lock free knows nobody will finish the job any more.
"""

from __future__ import annotations

import os
import sys
from datetime import datetime, timezone
from typing import Any

from trainer_sdk.backends.local import processes
from trainer_sdk.backends.local.jobdir import JobDir, read_json, write_json

__all__ = ["SUPERVISOR_LOST", "Guardian", "record_failure"]

SUPERVISOR_LOST = "SupervisorLost"
GRACE_SECONDS = 5.0


def record_failure(state: dict[str, Any], reason: str, message: str) -> None:
    """Mark the job in ``state`` (a ``state.json`` document) Failed and finished; pods that were
    still running are Failed too."""
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


class Guardian:
    """The supervisor's side of the guardian: ``release()`` once the job is finished."""

    def __init__(self, pid: int, pipe: int) -> None:
        self.pid = pid
        self._pipe = pipe

    @classmethod
    def start(cls, job_dir: JobDir, token: str, supervisor: int) -> Guardian:
        """Fork the guardian of ``supervisor`` (this process). Call it before starting threads."""
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the guardian
            os.close(write_end)
            os.setsid()  # outside the supervisor's process group: a group kill spares it
            code = 1
            try:
                _watch(read_end, job_dir, token, supervisor)
                code = 0
            finally:
                os._exit(code)
        os.close(read_end)
        return cls(pid, write_end)

    def release(self) -> None:
        """Tell the guardian the job is finished and let it exit."""
        os.write(self._pipe, b"x")
        os.close(self._pipe)
        os.waitpid(self.pid, 0)


def _watch(pipe: int, job_dir: JobDir, token: str, supervisor: int) -> None:
    if os.read(pipe, 1):
        return
    left = processes.terminate(lambda: processes.find(token=token), GRACE_SECONDS)
    message = (
        f"the job's supervisor (pid {supervisor}) ended before the job did; "
        "the job's processes were ended"
    )
    if left:
        message += f" (still alive: {', '.join(str(process.pid) for process in left)})"
    state = read_json(job_dir.state)
    if not state.get("finished"):
        record_failure(state, SUPERVISOR_LOST, message)
        write_json(job_dir.state, state)
    print(f"[trainer-sdk guardian] {message}", file=sys.stderr, flush=True)
