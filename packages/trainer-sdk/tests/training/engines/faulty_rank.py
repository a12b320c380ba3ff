"""Test support: a fine-tuning rank with a fault right after rank 0 committed checkpoint N, on
the job's first attempt only; otherwise the engine's entrypoint unchanged. Run by torchrun in
place of ``-m trainer_sdk.training.engines``:

    faulty_rank.py --kill-at=N ENGINE ARGS...   rank 0 kills itself with SIGKILL
    faulty_rank.py --hold-at=N ENGINE ARGS...   rank 0 waits until a signal ends it
                                                       (the test suspends the job meanwhile)
"""

from __future__ import annotations

import os
import runpy
import signal
import sys
from typing import Any

from trainer_sdk.training.engines import hf_trainer

fault, _, step = sys.argv[1].partition("=") if sys.argv[1].startswith("--") else ("", "", "0")
if fault:
    del sys.argv[1]
    commit = hf_trainer.PlatformCallback.on_save

    def on_save(self: Any, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        commit(self, args, state, control, **kwargs)
        first_attempt = os.environ.get("TRAINER_RESTART_ATTEMPT", "0") == "0"
        if state.global_step == int(step) and first_attempt and os.environ.get("RANK") == "0":
            if fault == "--kill-at":
                os.kill(os.getpid(), signal.SIGKILL)
            signal.pause()  # --hold-at: until the suspension's SIGTERM

    hf_trainer.PlatformCallback.on_save = on_save  # type: ignore[method-assign]
sys.argv[0] = "trainer_sdk.training.engines"
runpy.run_module("trainer_sdk.training.engines", run_name="__main__", alter_sys=True)
