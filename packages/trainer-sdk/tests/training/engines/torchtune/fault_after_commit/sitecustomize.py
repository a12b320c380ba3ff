"""Test support, on a trainer pod's ``PYTHONPATH``: with ``FAULT_AFTER_COMMIT=kill:N``, the rank
that commits checkpoint N kills itself with SIGKILL right after; with ``hold:N`` it waits there
until a signal comes (the test suspends the job meanwhile). On the job's first attempt only."""

from __future__ import annotations

import os
import signal

from trainer_sdk.checkpoint.status import ATTEMPT_ENV

_FAULT, _, _STEP = os.environ.get("FAULT_AFTER_COMMIT", "").partition(":")
if _FAULT and os.environ.get(ATTEMPT_ENV, "0") == "0":
    from pathlib import Path
    from typing import Any

    from trainer_sdk.checkpoint import _checkpointer

    _commit = _checkpointer.Checkpointer._commit

    def _commit_then_fault(self: Any, path: Path, step: int) -> None:
        _commit(self, path, step)
        if step != int(_STEP):
            return
        if _FAULT == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        signal.pause()  # hold: until the suspension's SIGTERM

    _checkpointer.Checkpointer._commit = _commit_then_fault  # type: ignore[method-assign]
