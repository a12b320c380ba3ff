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

import contextlib
import logging
import os
import shutil
import signal
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from pathlib import Path
from types import FrameType
from typing import Any

import torch
import torch.distributed as dist
from torch.distributed.checkpoint.api import CheckpointException
from torch.distributed.checkpoint.state_dict_loader import load as dcp_load
from torch.distributed.checkpoint.state_dict_saver import AsyncSaveResponse
from torch.distributed.checkpoint.state_dict_saver import async_save as dcp_async_save
from torch.distributed.checkpoint.state_dict_saver import save as dcp_save

from trainer_sdk.checkpoint import _formats, _layout, _staging, _state, status
from trainer_sdk.checkpoint.status import ATTEMPT_ENV, PREEMPTED_EXIT_CODE
from trainer_sdk.training.metrics import log_metrics

__all__ = ["ATTEMPT_ENV", "PREEMPTED_EXIT_CODE", "CheckpointError", "Checkpointer"]

log = logging.getLogger(__name__)


class CheckpointError(RuntimeError):
    """A save that failed (what it wrote is removed), or a restore that found checkpoints but
    could load none of them; the message names each and why."""


def _describe(error: BaseException) -> str:
    """One line per failure: DCP's ``CheckpointException`` carries one per rank."""
    if isinstance(error, CheckpointException):
        return "; ".join(
            f"rank {rank}: {type(cause).__name__}: {cause}"
            for rank, (cause, _) in sorted(error.failures.items())
        )
    return f"{type(error).__name__}: {error}"


def _failure(work: Callable[[], object]) -> str | None:
    """Run ``work``; None when it returned, else its error described (for a vote of ranks)."""
    try:
        work()
    except Exception as error:
        return _describe(error)
    return None


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
        """Load the latest complete checkpoint that every rank can read into the state; the step
        it was saved at (the step to continue from), 0 when there is none. A checkpoint that
        cannot be loaded (damaged, foreign) is skipped with a warning for the one before it;
        ``CheckpointError`` when none can. Collective."""
        self.wait()
        newest_first = list(reversed(_layout.checkpoints(self.directory)))
        candidates = self._broadcast(newest_first if self.rank == 0 else None)
        failures = []
        for found in candidates:
            problem = self._load(found)
            if problem is None:
                self._resumed(found)
                return int(found.step)
            failures.append(f"step {found.step} ({found.path}): {problem}")
            log.warning("the checkpoint of step %d cannot be restored: %s", found.step, problem)
        if failures:
            raise CheckpointError(
                f"no checkpoint under {self.directory} can be restored:\n  " + "\n  ".join(failures)
            )
        return 0

    def _load(self, found: _layout.Checkpoint) -> str | None:
        """Load ``found`` into the state; None when every rank did, else why not (every rank
        gets the same answer, so that all of them go on to the same checkpoint)."""
        problem = _failure(lambda: self._load_engines(found))
        if self._any_rank(problem is not None):
            return problem or "it failed on another rank"
        loaded = _state.tensor_state(self._parts)
        if loaded:
            try:  # collective: a failure on any rank is raised on every rank
                dcp_load(
                    loaded,
                    storage_reader=_formats.SafeReader(found.path / _state.TENSORS_DIR),
                    planner=_formats.SafePlanner(),
                    process_group=self._control,
                    no_dist=not self._distributed,
                )
            except (Exception, CheckpointException) as error:  # a BaseException
                return _describe(error)
        problem = _failure(lambda: self._load_rank(found, loaded))
        if self._any_rank(problem is not None):
            return problem or "it failed on another rank"
        return None

    def _load_engines(self, found: _layout.Checkpoint) -> None:
        _formats.check_entries(found.path)
        for name, engine in self._parts.engines.items():
            engine.load_checkpoint(
                str(found.path / _state.DEEPSPEED_DIR / name), _state.DEEPSPEED_TAG
            )

    def _load_rank(self, found: _layout.Checkpoint, loaded: Mapping[str, Any]) -> None:
        if loaded:
            _state.restore_tensor_parts(self._parts, loaded)
        _state.load_rank_part(_layout.rank_file(found.path, self.rank), self._parts)

    def _resumed(self, found: _layout.Checkpoint) -> None:
        if self.rank == 0:
            _layout.record_resume(self.directory, found.step, self.attempt)
            log_metrics(
                {status.RESUMED_FROM_METRIC: found.step, status.ATTEMPT_METRIC: self.attempt},
                found.step,
            )
        self.resumed_from = found
        self._last_saved_step = found.step
        log.info("resumed from the checkpoint of step %d (%s)", found.step, found.path)

    # Save -----------------------------------------------------------------------------------

    def save(self, step: int) -> None:
        """Save the state as step ``step`` (waiting for an earlier asynchronous save first; a
        step already saved is not saved again). A save that fails on any rank (a full volume)
        removes what it wrote and raises ``CheckpointError`` on every rank; the checkpoints
        before it stay. Collective."""
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise ValueError(f"step: expected an integer >= 0, got {step!r}")
        self.wait()
        if step == self._last_saved_step:
            return
        part = _state.rank_part(self._parts)
        self._last_saved_step = step
        path = _layout.step_dir(self.directory, step)
        # Rank 0 frees what earlier saves left (incomplete directories), then every rank
        # writes its own part; a failure anywhere is seen by every rank at the vote.
        self._vote(path, step, lambda: self._prepare(path) if self.rank == 0 else None)
        self._vote(path, step, lambda: self._save_rank(path, part))
        tensors = _state.tensor_state(self._parts)
        if not tensors:
            self._barrier()
            if self.rank == 0:
                self._commit(path, step)
            return
        try:
            if self._staging is not None:
                self._pending = (self._save_async(path, tensors), path, step)
                return
            dcp_save(
                tensors,
                checkpoint_id=path / _state.TENSORS_DIR,
                process_group=self._control,
                no_dist=not self._distributed,
            )
        except (Exception, CheckpointException) as error:  # collective: raised on every rank
            raise self._failed(path, step, error) from None
        self._barrier()
        if self.rank == 0:
            self._commit(path, step)

    def _prepare(self, path: Path) -> None:
        _layout.remove(path)  # an attempt that died while writing this step
        _layout.prune(self.directory, None)  # incomplete saves of earlier attempts
        path.mkdir(parents=True)

    def _save_rank(self, path: Path, part: Mapping[str, Any]) -> None:
        _state.save_rank_part(_layout.rank_file(path, self.rank), part)
        for name, engine in self._parts.engines.items():
            engine.save_checkpoint(str(path / _state.DEEPSPEED_DIR / name), _state.DEEPSPEED_TAG)

    def _save_async(self, path: Path, tensors: dict[str, Any]) -> Future[Any]:
        """Start the background copy and write; the future of the write."""
        assert self._staging is not None
        # The copy to CPU memory and the write both run in the background; the optimizers
        # (and modules with buffers) wait for the copy before they change.
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
        return response

    def _vote(self, path: Path, step: int, work: Callable[[], object]) -> None:
        """Run this rank's ``work``; if it failed on any rank, fail the save on every rank."""
        problem = _failure(work)
        if self._any_rank(problem is not None):
            raise self._failed(path, step, problem or "it failed on another rank")

    def _failed(self, path: Path, step: int, error: BaseException | str) -> CheckpointError:
        """The error of a failed save of ``step``, once rank 0 has removed what it wrote."""
        self._last_saved_step = None
        cleanup = ""
        if self.rank == 0:
            try:
                _layout.remove(path)
            except OSError as removal:
                cleanup = f"; {path} could not be removed either: {removal}"
        problem = error if isinstance(error, str) else _describe(error)
        before = _layout.latest(self.directory)
        kept = f"the latest complete one is step {before.step}" if before else "none is complete"
        with contextlib.suppress(OSError):  # torch.save reports a full disk in its own words
            kept += f"; {shutil.disk_usage(self.directory).free} bytes free on its volume"
        return CheckpointError(
            f"the checkpoint of step {step} could not be saved to {path}: {problem}{cleanup} "
            f"({kept})"
        )

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
        try:
            if self._staging is not None:
                self._staging.wait()
            future.result()
        except (Exception, CheckpointException) as error:
            raise self._failed(path, step, error) from None
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
