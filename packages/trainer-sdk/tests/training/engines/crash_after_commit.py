"""Test support: a fine-tuning rank that, with ``--crash-at=N``, kills itself with SIGKILL right
after rank 0 committed checkpoint N, on the job's first attempt only; otherwise the engine's
entrypoint unchanged. Run by torchrun in place of ``-m trainer_sdk.training.engines``."""

from __future__ import annotations

import os
import runpy
import signal
import sys
from typing import Any

from trainer_sdk.training.engines import hf_trainer

crash_at = [int(arg.split("=", 1)[1]) for arg in sys.argv[1:2] if arg.startswith("--crash-at=")]
if crash_at:
    del sys.argv[1]
    commit = hf_trainer.PlatformCallback.on_save

    def on_save(self: Any, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        commit(self, args, state, control, **kwargs)
        first_attempt = os.environ.get("TRAINER_RESTART_ATTEMPT", "0") == "0"
        if state.global_step == crash_at[0] and first_attempt and os.environ.get("RANK") == "0":
            os.kill(os.getpid(), signal.SIGKILL)

    hf_trainer.PlatformCallback.on_save = on_save  # type: ignore[method-assign]
sys.argv[0] = "trainer_sdk.training.engines"
runpy.run_module("trainer_sdk.training.engines", run_name="__main__", alter_sys=True)
