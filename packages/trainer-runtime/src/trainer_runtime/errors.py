"""Errors of the runtime framework.

```
RuntimeFrameworkError
 +-- BuildError                  the job cannot be built (missing runtime, bad policy, ...)
      +-- InvalidTrainJobError   field errors found by the plugins' validation
```
`build` turns a BuildError into a TrainJob condition; the CLI prints it and exits non-zero.
"""

from __future__ import annotations

from collections.abc import Sequence

from trainer_api import FieldError

__all__ = ["BuildError", "InvalidTrainJobError", "RuntimeFrameworkError"]


class RuntimeFrameworkError(Exception):
    """Base of the errors raised by the runtime framework."""


class BuildError(RuntimeFrameworkError):
    """The TrainJob cannot be turned into objects; the message says why and what to fix."""


class InvalidTrainJobError(BuildError):
    """The TrainJob does not fit its runtime; ``errors`` holds one FieldError per problem."""

    def __init__(self, errors: Sequence[FieldError]) -> None:
        super().__init__("\n".join(str(error) for error in errors))
        self.errors: tuple[FieldError, ...] = tuple(errors)
