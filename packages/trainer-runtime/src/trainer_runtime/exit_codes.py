"""Which pod exit codes restart a JobSet and which fail it: one policy, applied by the local
executor to each failed pod and rendered into a cluster's pod failure policy (the checkpoint
plugin's ``restart_policies``).

=========================================  ==============================  ====================
a pod ends with                            meaning                         the JobSet
=========================================  ==============================  ====================
0                                          success                         goes on
126, 127                                   its command cannot run (not     fails at once: a
                                           executable, not found)          restart repeats it
128                                        its container could not start   fails at once
143, or killed by SIGTERM                  preempted (a checkpointing      restarts (in a
                                           rank saved, then exited)        cluster a disrupted
                                                                           pod does not count)
anything else: 1 (a Python error; under    a failure a restart may get     restarts within
torchrun any failed rank), 137 (SIGKILL,   past                            ``maxRestarts``
an OOM kill), 139 (a crash), ...
=========================================  ==============================  ====================

Exit code 1 restarts: under torchrun every failed rank, an OOM-killed one included, ends its node
with 1, so failing the JobSet on 1 would leave no failure to restart. A process killed by signal
N counts as exit code 128 + N, as a container's status reports it.
"""

from __future__ import annotations

import signal
from enum import Enum
from typing import Final

__all__ = [
    "FAIL_EXIT_CODES",
    "PREEMPTED_EXIT_CODE",
    "ExitAction",
    "container_exit_code",
    "exit_action",
]

FAIL_EXIT_CODES: Final = (126, 127, 128)
"""Exit codes that fail the JobSet without a restart."""
PREEMPTED_EXIT_CODE: Final = 128 + signal.SIGTERM


class ExitAction(Enum):
    """What a pod's exit does to its JobSet."""

    SUCCEEDED = "Succeeded"
    RESTART = "Restart"  # within maxRestarts
    PREEMPTED = "Preempted"  # a restart too; the local executor reads the JobSet Suspended
    FAIL = "Fail"  # at once, however many restarts are left


def container_exit_code(code: int) -> int:
    """A process's exit status as a container reports it (killed by signal N: 128 + N)."""
    return 128 - code if code < 0 else code


def exit_action(code: int) -> ExitAction:
    """What exit status ``code`` (negative: killed by that signal) does to the JobSet."""
    code = container_exit_code(code)
    if code == 0:
        return ExitAction.SUCCEEDED
    if code in FAIL_EXIT_CODES:
        return ExitAction.FAIL
    if code == PREEMPTED_EXIT_CODE:
        return ExitAction.PREEMPTED
    return ExitAction.RESTART
