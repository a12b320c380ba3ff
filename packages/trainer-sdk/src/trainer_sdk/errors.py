"""Errors the SDK raises.

TrainerError
├── JobNotFoundError        (also RuntimeError: the upstream SDK raised RuntimeError)
├── RuntimeNotFoundError    (also RuntimeError)
├── JobFailedError          (also RuntimeError: wait_for_job_status raised it)
├── InvalidTrainJobError    (also ValueError: bad arguments or manifest; carries field errors)
└── MissingPackageError     (also RuntimeError: a local job needs a package this Python lacks)
"""

from __future__ import annotations

from collections.abc import Sequence

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


class JobNotFoundError(TrainerError, RuntimeError):
    """No TrainJob of that name exists (the same type on every backend)."""

    def __init__(self, name: str, where: str) -> None:
        super().__init__(f"TrainJob {name!r} not found in {where}")
        self.name = name


class RuntimeNotFoundError(TrainerError, RuntimeError):
    """No training runtime of that name exists."""

    def __init__(self, name: str, available: Sequence[str]) -> None:
        known = ", ".join(sorted(available)) or "none"
        super().__init__(f"runtime {name!r} not found; available runtimes: {known}")
        self.name = name


class JobFailedError(TrainerError, RuntimeError):
    """A TrainJob failed; the message holds the failing step's last log lines."""

    def __init__(
        self, name: str, reason: str, step: str | None = None, last_lines: Sequence[str] = ()
    ) -> None:
        where = f" (step {step})" if step else ""
        tail = "".join(f"\n  | {line}" for line in last_lines)
        super().__init__(f"TrainJob {name!r} failed{where}: {reason}{tail}")
        self.name = name
        self.step = step
        self.last_lines = tuple(last_lines)


class InvalidTrainJobError(TrainerError, ValueError):
    """Bad input: each problem names its field."""

    def __init__(self, errors: Sequence[str]) -> None:
        super().__init__("\n".join(errors))
        self.errors = tuple(errors)


class MissingPackageError(TrainerError, RuntimeError):
    """A local job's command needs a module that the Python it runs in cannot import."""

    def __init__(self, command: str, module: str, python: str, install: str) -> None:
        super().__init__(
            f"the job runs {command!r}, which needs the module {module!r}, but {python} cannot "
            f"import it; install it with: {install}"
        )
        self.command = command
        self.module = module
