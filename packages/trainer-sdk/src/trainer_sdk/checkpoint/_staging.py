"""Staging of asynchronous saves off the training thread.

DCP's ``async_save`` first copies the state to CPU memory ("staging") and only then writes it in
the background; by default that copy runs on the caller's thread, so on a CPU-only run an
asynchronous save blocked training about as long as a synchronous one. Here the copy runs in a
background thread too (DCP's ``DefaultStager`` with asynchronous staging), and the training
thread waits for it only where it would change what is being copied: before an optimizer step
(``register_step_pre_hook``) and, for a module with buffers in its state (batch-norm
statistics, which forward updates), before its forward. Forward and backward of the next step
run while the copy is made.
"""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import Future
from typing import Any

import torch
from torch import nn
from torch.distributed.checkpoint.staging import DefaultStager, StagingOptions
from torch.utils.hooks import RemovableHandle

__all__ = ["StagingGuard"]


class StagingGuard:
    """Owns the stager of one ``Checkpointer`` and the hooks that wait for its copy."""

    def __init__(
        self, modules: Iterable[nn.Module], optimizers: Iterable[torch.optim.Optimizer]
    ) -> None:
        on_gpu = torch.cuda.is_available()
        self.stager = DefaultStager(
            StagingOptions(
                use_pinned_memory=on_gpu,
                use_shared_memory=False,  # only the process-based checkpointer needs it
                use_async_staging=True,
                use_non_blocking_copy=on_gpu,
            )
        )
        self._staging: Future[Any] | None = None
        self._hooks: list[RemovableHandle] = [
            optimizer.register_step_pre_hook(self._before_change) for optimizer in optimizers
        ]
        self._hooks += [
            module.register_forward_pre_hook(self._before_change)
            for module in modules
            if any(True for _ in module.buffers())
        ]

    def started(self, staging: Future[Any] | None) -> None:
        """A save's copy is under way (None: it was made on this thread)."""
        self._staging = staging

    def wait(self) -> None:
        """Until the copy in flight is complete (its error, if any, is raised)."""
        staging, self._staging = self._staging, None
        if staging is not None:
            staging.result()

    def _before_change(self, *_: object) -> None:
        if self._staging is not None:
            self.wait()

    def close(self) -> None:
        """Remove the hooks and stop the stager's thread."""
        self.wait()
        for hook in self._hooks:
            hook.remove()
        self._hooks = []
        self.stager.close()
