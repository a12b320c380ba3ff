"""What every rank of a ``CustomTrainer`` job (and of ``trainer run FILE.py``) runs around it.

    python rank_entrypoint.py USER_FILE [ARGS...]      (torchrun / mpirun run it the same way)

It runs ``USER_FILE`` as ``__main__`` (``sys.argv`` is ``[USER_FILE, ARGS...]``), then ends the
process itself instead of leaving it to interpreter finalization:

- user code returned (or called ``sys.exit(0)``): wait for non-daemon threads, run the ``atexit``
  handlers, finalize MPI if mpi4py initialized it, flush every open file, ``os._exit(0)``;
- user code raised: print its traceback (through ``sys.excepthook``, without this module's
  frames), run the same exit steps, abort MPI if it is initialized, ``os._exit(1)``. A rank that
  an MPI launcher started prints the traceback with each line tagged ``[rankN]: `` as
  torch.distributed's excepthook tags them: the ranks of one mpirun share a log, and the tag is
  how a failure names the rank that raised. So does a torchrun rank (``RANK``) whose code failed
  before or without ``init_process_group`` (torch's hook not yet installed).

Why: on torch 2.13 with gloo, the worker thread of a process group (``ProcessGroupGloo::runLoop``)
may destroy the last collective's work object after the main thread has entered interpreter
finalization; the work's captured thread-local state holds a Python object whose decref takes the
GIL, a finalizing CPython ends that thread with ``pthread_exit``, and the forced unwinding through
the ``noexcept`` destructor calls ``std::terminate``: ``terminate called without an active
exception``, SIGABRT, a Failed job after training finished (seen in a core of such a rank).
Skipping finalization once everything a normal exit guarantees has been done removes the race.

With ``TRAINER_GEMS=1`` in its environment (the ``GemsKernels`` option sets it; a YAML TrainJob
sets it in ``.spec.trainer.env``) a rank calls ``gems_kernels.enable()`` before the user file, so
the whole rank runs its ATen ops on gems kernels where they have one; the image must have
``gems-kernels`` installed (``trainer-sdk[torch]`` pulls it in).

The SDK embeds this file's source in the trainer command (pods run images without the SDK), so it
imports only the standard library (and gems_kernels, only when ``TRAINER_GEMS=1`` asks for it).
"""

from __future__ import annotations

import atexit
import gc
import io
import os
import runpy
import sys
import threading
import traceback
from types import TracebackType
from typing import NoReturn

__all__ = ["GEMS_ENV", "enable_gems", "exit_code", "finish", "main", "mpi_rank", "run_user_file"]

# The switch that makes a rank run under ``gems_kernels.enable()``.
GEMS_ENV = "TRAINER_GEMS"
_GEMS_VALUES = {"1": True, "true": True, "0": False, "false": False, "": False}


def exit_code(error: SystemExit) -> int:
    """The status Python would exit with for ``error`` (printing a non-integer code)."""
    if error.code is None:
        return 0
    if isinstance(error.code, int):
        return error.code
    print(error.code, file=sys.stderr)
    return 1


def _user_frames(tb: TracebackType | None, path: str) -> TracebackType | None:
    """The traceback from the first frame in ``path`` on (this module and runpy left out)."""
    current = tb
    while current is not None and current.tb_frame.f_code.co_filename != path:
        current = current.tb_next
    return current or tb


# Where MPI launchers put a rank's number: Open MPI, then MPICH and Intel MPI (hydra), PMIx.
_MPI_RANK_ENV = ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK")
_TORCHRUN_ENV = "TORCHELASTIC_RUN_ID"


def mpi_rank(environ: dict[str, str] | None = None) -> str | None:
    """This process's rank when an MPI launcher started it, else None (torchrun included)."""
    env = os.environ if environ is None else environ
    if _TORCHRUN_ENV in env:
        return None
    return next((env[name] for name in _MPI_RANK_ENV if env.get(name, "").isdigit()), None)


def _print_failure(error: BaseException, frames: TracebackType | None) -> None:
    """The traceback, each line tagged with the rank unless torch.distributed's excepthook
    (which tags them itself) is in place: a failure before or outside torch.distributed still
    names its rank (torchrun's ``RANK``)."""
    rank = mpi_rank()
    if rank is None and sys.excepthook is sys.__excepthook__:
        rank = os.environ.get("RANK") if os.environ.get("RANK", "").isdigit() else None
    if rank is None:
        sys.excepthook(type(error), error, frames)
        return
    lines = "".join(traceback.format_exception(type(error), error, frames)).splitlines()
    sys.stderr.write("".join(f"[rank{rank}]: {line}\n" for line in lines))


def enable_gems(environ: dict[str, str] | None = None) -> bool:
    """Call ``gems_kernels.enable()`` when ``TRAINER_GEMS`` says so; whether it did. A value
    other than 1/true/0/false, or gems_kernels missing, raises a ``RuntimeError`` naming it."""
    env = os.environ if environ is None else environ
    value = env.get(GEMS_ENV, "").strip().lower()
    if value not in _GEMS_VALUES:
        raise RuntimeError(f"{GEMS_ENV}: expected 1, true, 0 or false, got {env[GEMS_ENV]!r}")
    if not _GEMS_VALUES[value]:
        return False
    try:
        import gems_kernels
    except ImportError as error:
        raise RuntimeError(
            f"{GEMS_ENV}=1 asks for gems kernels, but gems_kernels does not import ({error}); "
            "install it in the image: pip install 'trainer-sdk[torch]' (or gems-kernels)"
        ) from error
    gems_kernels.enable()
    return True


def run_user_file(path: str, args: list[str]) -> int:
    """Run ``path`` as ``__main__`` with ``args``; the exit status it asks for (1 if it raised)."""
    sys.argv = [path, *args]
    try:
        runpy.run_path(path, run_name="__main__")
    except SystemExit as error:
        return exit_code(error)
    except BaseException as error:
        user_frames = _user_frames(error.__traceback__, path)
        _print_failure(error.with_traceback(user_frames), user_frames)
        return 1
    return 0


def _end_mpi(status: int) -> None:
    """Finalize MPI (abort the job on failure) if user code initialized it through mpi4py,
    as ``python -m mpi4py`` would; ``mpi4py.rc.finalize = False`` is respected."""
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is None or not mpi.Is_initialized() or mpi.Is_finalized():
        return
    if status != 0:
        mpi.COMM_WORLD.Abort(status)
    elif getattr(getattr(sys.modules.get("mpi4py"), "rc", None), "finalize", None) is not False:
        mpi.Finalize()


def _flush_open_files() -> None:
    """Flush every open Python file object, as their finalizers would at a normal exit."""
    for stream in gc.get_objects():
        # The type, not the object: isinstance() reads attributes (deprecated ones warn).
        if issubclass(type(stream), io.IOBase) and not stream.closed:
            try:
                stream.flush()
            except Exception:
                continue
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        if stream is not None:
            try:
                stream.flush()
            except Exception:
                continue


def finish(status: int) -> NoReturn:
    """Do what a normal interpreter exit guarantees, then end the process with ``status``."""
    try:
        threading._shutdown()  # type: ignore[attr-defined]  # waits for non-daemon threads
        atexit._run_exitfuncs()
        _end_mpi(status)
    except BaseException:
        traceback.print_exc()
        status = status or 1
    _flush_open_files()
    os._exit(status)


def main(argv: list[str] | None = None) -> NoReturn:
    """Entry point: ``training/rank_entrypoint.py USER_FILE [ARGS...]``."""
    args = sys.argv[1:] if argv is None else argv
    if not args:
        print("usage: training/rank_entrypoint.py USER_FILE [ARGS...]", file=sys.stderr)
        finish(2)
    path = args[0]
    sys.path[0] = os.path.dirname(os.path.abspath(path))  # as if Python ran USER_FILE itself
    try:
        enable_gems()
    except RuntimeError as error:
        print(f"rank_entrypoint: {error}", file=sys.stderr)
        finish(1)
    finish(run_user_file(path, args[1:]))


if __name__ == "__main__":
    main()
