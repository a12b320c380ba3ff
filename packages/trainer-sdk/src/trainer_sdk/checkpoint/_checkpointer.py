"""``Checkpointer``: save a training state every N steps, resume from the latest, stop cleanly
on SIGTERM.

Every rank makes one ``Checkpointer`` with the same arguments, calls ``restore()`` once before
the loop and ``step(n)`` after each optimizer step; both are collective. Rank 0 alone picks the
checkpoint to restore (and broadcasts it), writes commit markers and removes old checkpoints.
Collectives run on two gloo groups of their own: one for control (barriers, the stop vote,
synchronous saves) and one for asynchronous DCP saves, whose collectives run in a background
thread while training uses the default group.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import threading
from collections.abc import Mapping
from concurrent.futures import Future
from pathlib import Path
from types import FrameType
from typing import Any

import torch
import torch.distributed as dist
from torch.distributed.checkpoint.state_dict_loader import load as dcp_load
from torch.distributed.checkpoint.state_dict_saver import AsyncSaveResponse
from torch.distributed.checkpoint.state_dict_saver import async_save as dcp_async_save
from torch.distributed.checkpoint.state_dict_saver import save as dcp_save

from trainer_sdk.checkpoint import _layout, _staging, _state, status
from trainer_sdk.checkpoint.status import ATTEMPT_ENV, PREEMPTED_EXIT_CODE
from trainer_sdk.training.metrics import log_metrics

__all__ = ["ATTEMPT_ENV", "PREEMPTED_EXIT_CODE", "Checkpointer"]

log = logging.getLogger(__name__)


def _positive_or_none(name: str, value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name}: expected an integer >= 1 or None, got {value!r}")
    return value


class Checkpointer:
    """Saves ``state`` (see ``trainer_sdk.checkpoint`` for what it may hold) under
    ``directory`` (default: the ``TRAINER_CHECKPOINT_DIR`` env the runtime sets).

    ``every``: save when ``step(n)`` sees ``n % every == 0`` (None: only on ``save`` and
    SIGTERM). ``keep_last``: how many complete checkpoints to keep (None: all).
    ``async_save``: write modules and optimizers in the background (DCP ``async_save``); the
    next save, ``wait()`` or ``close()`` waits for it. ``handle_sigterm``: on SIGTERM, the next
    ``step(n)`` saves step n on every rank and exits with ``PREEMPTED_EXIT_CODE``.
    """

    def __init__(
        self,
        state: Mapping[str, Any],
        *,
        directory: str | os.PathLike[str] | None = None,
        every: int | None = None,
        keep_last: int | None = 3,
        async_save: bool = False,
        handle_sigterm: bool = True,
    ) -> None:
        if directory is None:
            directory = os.environ.get(_layout.CHECKPOINT_DIR_ENV) or None
        if directory is None:
            raise ValueError(
                f"directory: not given and {_layout.CHECKPOINT_DIR_ENV} is not set; pass a "
                "directory or give the job a checkpoint volume (see the trainer-sdk README)"
            )
        self.directory = Path(directory)
        self.every = _positive_or_none("every", every)
        self.keep_last = _positive_or_none("keep_last", keep_last)
        self.async_save = bool(async_save)
        self._parts = _state.split(state)
        self._distributed = dist.is_available() and dist.is_initialized()
        self.rank = dist.get_rank() if self._distributed else 0
        self.world_size = dist.get_world_size() if self._distributed else 1
        self.attempt = int(os.environ.get(ATTEMPT_ENV) or 0)
        self._control = dist.new_group(backend="gloo") if self._distributed else None
        self._background = (
            dist.new_group(backend="gloo") if self._distributed and self.async_save else None
        )
        self._pending: tuple[Future[Any], Path, int] | None = None
        self._staging = (
            _staging.StagingGuard(
                self._parts.modules.values(),
                [optimizer for _, optimizer in self._parts.optimizers.values()],
            )
            if self.async_save
            else None
        )
        self._last_saved_step: int | None = None
        self._stop_requested = False
        self.resumed_from: _layout.Checkpoint | None = None
        self._previous_handler: Any = None
        if handle_sigterm and threading.current_thread() is threading.main_thread():
            self._previous_handler = signal.signal(signal.SIGTERM, self._on_sigterm)
        if self.rank == 0:
            self.directory.mkdir(parents=True, exist_ok=True)

    # Signals --------------------------------------------------------------------------------

    def _on_sigterm(self, signum: int, frame: FrameType | None) -> None:
        log.warning("SIGTERM: checkpointing at the next step boundary, then exiting")
        self._stop_requested = True

    @property
    def stop_requested(self) -> bool:
        """Whether this rank has received SIGTERM."""
        return self._stop_requested

    # Coordination ---------------------------------------------------------------------------

    def _barrier(self) -> None:
        if self._control is not None:
            dist.barrier(group=self._control)

    def _broadcast(self, value: Any) -> Any:
        if self._control is None:
            return value
        box = [value]
        dist.broadcast_object_list(box, src=0, group=self._control)
        return box[0]

    def _any_rank(self, flag: bool) -> bool:
        if self._control is None:
            return flag
        vote = torch.tensor([int(flag)])
        dist.all_reduce(vote, op=dist.ReduceOp.MAX, group=self._control)
        return bool(vote.item())

    # Restore --------------------------------------------------------------------------------

    def restore(self) -> int:
        """Load the latest complete checkpoint into the state; the step it was saved at (the
        step to continue from), 0 when there is none. Collective."""
        self.wait()
        found = self._broadcast(_layout.latest(self.directory) if self.rank == 0 else None)
        if found is None:
            return 0
        for name, engine in self._parts.engines.items():
            engine.load_checkpoint(
                str(found.path / _state.DEEPSPEED_DIR / name), _state.DEEPSPEED_TAG
            )
        if self._parts.modules or self._parts.optimizers or self._parts.tensors:
            loaded = _state.tensor_state(self._parts)
            dcp_load(
                loaded,
                checkpoint_id=found.path / _state.TENSORS_DIR,
                process_group=self._control,
                no_dist=not self._distributed,
            )
            _state.restore_tensor_parts(self._parts, loaded)
        _state.load_rank_part(_layout.rank_file(found.path, self.rank), self._parts)
        if self.rank == 0:
            _layout.record_resume(self.directory, found.step, self.attempt)
            log_metrics(
                {status.RESUMED_FROM_METRIC: found.step, status.ATTEMPT_METRIC: self.attempt},
                found.step,
            )
        self.resumed_from = found
        self._last_saved_step = found.step
        log.info("resumed from the checkpoint of step %d (%s)", found.step, found.path)
        return int(found.step)

    # Save -----------------------------------------------------------------------------------

    def save(self, step: int) -> None:
        """Save the state as step ``step`` (waiting for an earlier asynchronous save first; a
        step already saved is not saved again). Collective."""
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise ValueError(f"step: expected an integer >= 0, got {step!r}")
        self.wait()
        if step == self._last_saved_step:
            return
        self._last_saved_step = step
        path = _layout.step_dir(self.directory, step)
        if self.rank == 0:
            if path.exists():  # an attempt that died while writing this step
                shutil.rmtree(path)
            path.mkdir(parents=True)
        self._barrier()
        _state.save_rank_part(_layout.rank_file(path, self.rank), self._parts)
        for name, engine in self._parts.engines.items():
            engine.save_checkpoint(str(path / _state.DEEPSPEED_DIR / name), _state.DEEPSPEED_TAG)
        if self._parts.modules or self._parts.optimizers or self._parts.tensors:
            tensors = _state.tensor_state(self._parts)
            if self._staging is not None:
                # The copy to CPU memory and the write both run in the background; the
                # optimizers (and modules with buffers) wait for the copy before they change.
                response = dcp_async_save(
                    tensors,
                    checkpoint_id=path / _state.TENSORS_DIR,
                    process_group=self._background,
                    async_stager=self._staging.stager,
                    no_dist=not self._distributed,
                )
                staged = None
                if isinstance(response, AsyncSaveResponse):
                    staged, response = response.staging_completion, response.upload_completion
                self._staging.started(staged)
                if self._parts.tensors:  # plain mappings have no hook to wait at
                    self._staging.wait()
                self._pending = (response, path, step)
                return
            dcp_save(
                tensors,
                checkpoint_id=path / _state.TENSORS_DIR,
                process_group=self._control,
                no_dist=not self._distributed,
            )
        self._barrier()
        if self.rank == 0:
            self._commit(path, step)

    def _commit(self, path: Path, step: int) -> None:
        checkpoint = _layout.commit(path, step, self.world_size, self.attempt)
        _layout.prune(self.directory, self.keep_last)
        log_metrics(
            {
                status.STEP_METRIC: step,
                status.SAVED_AT_METRIC: checkpoint.saved_at,
                status.ATTEMPT_METRIC: self.attempt,
            },
            step,
        )
        log.info("checkpoint of step %d committed (%s)", checkpoint.step, path)

    def _poll(self) -> None:
        """Commit an asynchronous save that has finished (rank 0: its DCP future completes
        only after every rank has written its part)."""
        if self._pending is not None and self._pending[0].done():
            self.wait()

    def wait(self) -> None:
        """Wait for an asynchronous save in flight and commit it (an error in it is raised)."""
        if self._pending is None:
            return
        future, path, step = self._pending
        self._pending = None
        if self._staging is not None:
            self._staging.wait()
        future.result()
        if self.rank == 0:
            self._commit(path, step)

    # The training loop's hook ---------------------------------------------------------------

    def step(self, step: int) -> None:
        """Call after step ``step`` is done on every rank: saves every ``every`` steps; after a
        SIGTERM on any rank, saves on all of them and exits with ``PREEMPTED_EXIT_CODE``."""
        if self.rank == 0:
            self._poll()
        if self._any_rank(self._stop_requested):
            self.save(step)
            self.close()
            raise SystemExit(PREEMPTED_EXIT_CODE)
        if self.every is not None and step % self.every == 0:
            self.save(step)

    def latest(self) -> _layout.Checkpoint | None:
        """The latest complete checkpoint on disk (as this rank sees the directory)."""
        return _layout.latest(self.directory)

    def close(self) -> None:
        """Wait for a save in flight, stop the background staging, and put the previous
        SIGTERM handler back."""
        self.wait()
        if self._staging is not None:
            self._staging.close()
            self._staging = None
        if self._previous_handler is not None:
            signal.signal(signal.SIGTERM, self._previous_handler)
            self._previous_handler = None

    def __enter__(self) -> Checkpointer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
