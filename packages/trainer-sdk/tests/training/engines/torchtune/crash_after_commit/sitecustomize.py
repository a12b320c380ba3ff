"""Test support, on a trainer pod's ``PYTHONPATH``: with ``CRASH_AFTER_COMMIT=N``, the rank that
commits checkpoint N kills itself with SIGKILL right after, on the job's first attempt only."""

from __future__ import annotations

import os
import signal

from trainer_sdk.checkpoint.status import ATTEMPT_ENV

_STEP = os.environ.get("CRASH_AFTER_COMMIT")
if _STEP and os.environ.get(ATTEMPT_ENV, "0") == "0":
    from pathlib import Path
    from typing import Any

    from trainer_sdk.checkpoint import _checkpointer

    _commit = _checkpointer.Checkpointer._commit

    def _commit_then_die(self: Any, path: Path, step: int) -> None:
        _commit(self, path, step)
        if step == int(_STEP):
            os.kill(os.getpid(), signal.SIGKILL)

    _checkpointer.Checkpointer._commit = _commit_then_die  # type: ignore[method-assign]
