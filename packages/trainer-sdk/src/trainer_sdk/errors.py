"""Errors the SDK raises.

TrainerError
├── JobNotFoundError        (also RuntimeError and ValueError: upstream's Kubernetes backend
│                            raises RuntimeError, its local backends ValueError)
├── RuntimeNotFoundError    (also RuntimeError and ValueError, likewise)
├── JobFailedError          (also RuntimeError: wait_for_job_status raised it)
├── InvalidTrainJobError    (also ValueError: bad arguments or manifest; carries field errors)
└── MissingPackageError     (also RuntimeError: a local job needs a package this Python lacks)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from trainer_api import FieldError

__all__ = [
    "InvalidTrainJobError",
    "JobFailedError",
    "JobNotFoundError",
    "MissingPackageError",
    "RuntimeNotFoundError",
    "TrainerError",
]


class TrainerError(Exception):
    """Base of every error the SDK raises on purpose."""


class JobNotFoundError(TrainerError, RuntimeError, ValueError):
    """No TrainJob of that name exists (the same type on every backend)."""

    def __init__(self, name: str, where: str) -> None:
        super().__init__(f"TrainJob {name!r} not found in {where}")
        self.name = name


class RuntimeNotFoundError(TrainerError, RuntimeError, ValueError):
    """No training runtime of that name exists."""

    def __init__(self, name: str, available: Sequence[str]) -> None:
        known = ", ".join(sorted(available)) or "none"
        super().__init__(f"runtime {name!r} not found; available runtimes: {known}")
        self.name = name


class JobFailedError(TrainerError, RuntimeError):
    """A TrainJob failed. The message leads with the user's own exception and the rank that raised
    it when the failing step's log holds one (then its traceback), else the job's reason and the
    step's last log lines."""

    def __init__(
        self,
        name: str,
        reason: str,
        step: str | None = None,
        last_lines: Sequence[str] = (),
        *,
        exception: str | None = None,
        rank: int | None = None,
    ) -> None:
        places = [f"rank {rank}"] if rank is not None else []
        places += [f"step {step}"] if step else []
        where = f" ({', '.join(places)})" if places else ""
        tail = "".join(f"\n  | {line}" for line in last_lines)
        if exception:
            message = f"TrainJob {name!r} failed: {exception}{where}{tail}\n  job status: {reason}"
        else:
            message = f"TrainJob {name!r} failed{where}: {reason}{tail}"
        super().__init__(message)
        self.name = name
        self.reason = reason
        self.step = step
        self.last_lines = tuple(last_lines)
        self.exception = exception
        self.rank = rank


class InvalidTrainJobError(TrainerError, ValueError):
    """Bad input: ``errors`` holds one ``trainer_api.FieldError`` (the field path, as in the
    manifest, and what is wrong) per problem, as the runtime framework reported them."""

    def __init__(self, errors: Sequence[FieldError]) -> None:
        super().__init__("\n".join(str(error) for error in errors))
        self.errors: tuple[FieldError, ...] = tuple(errors)


class MissingPackageError(TrainerError, RuntimeError):
    """A local job's command needs a module that the Python it runs in cannot import."""

    def __init__(self, command: str, module: str, python: str, install: str) -> None:
        super().__init__(
            f"the job runs {command!r}, which needs the module {module!r}, but {python} cannot "
            f"import it; install it with: {install}"
        )
        self.command = command
        self.module = module
