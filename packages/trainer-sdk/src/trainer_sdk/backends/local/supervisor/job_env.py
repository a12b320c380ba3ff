"""The environment every process of a local job inherits.

It is the supervisor's own (the environment of the client that started it) with the interpreter
shims first on ``PATH``, unbuffered output, the progress file, the job's token and, with
``packages_to_install``, the installed packages' paths on ``PYTHONPATH``. The supervisor builds
it when the job runs; at submit only its names are known, which is what the plan's compiler
needs (``job_env_names``: the variables an MPI launcher forwards to its ranks).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from trainer_sdk import constants
from trainer_sdk.backends.local.supervisor.processes import JOB_TOKEN_ENV
from trainer_sdk.training.progress import STATUS_FILE_ENV

__all__ = ["PackagePaths", "job_env", "job_env_names"]

PackagePaths = tuple[Sequence[Path], Sequence[Path]]
"""Installed package directories that go before and after the inherited ``PYTHONPATH``."""


def job_env(
    inherited: Mapping[str, str],
    *,
    shims: Path,
    progress: Path,
    token: str,
    package_paths: PackagePaths | None = None,
) -> dict[str, str]:
    """``inherited`` with the job's additions (``package_paths`` None: no packages to install)."""
    env = dict(inherited)
    env["PATH"] = f"{shims}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONUNBUFFERED"] = "1"
    env[STATUS_FILE_ENV] = str(progress)
    env[JOB_TOKEN_ENV] = token
    if package_paths is not None:
        first, rest = package_paths
        path = [*map(str, first), env.get("PYTHONPATH"), *map(str, rest)]
        env["PYTHONPATH"] = os.pathsep.join(filter(None, path))
        env[constants.PACKAGES_READY_ENV] = "1"
    return env


def job_env_names(inherited: Iterable[str], packages: bool) -> frozenset[str]:
    """The names ``job_env`` will have, given the names it inherits and whether the job
    installs packages."""
    paths: PackagePaths | None = ((), ()) if packages else None
    env = job_env(
        dict.fromkeys(inherited, ""), shims=Path(), progress=Path(), token="", package_paths=paths
    )
    return frozenset(env)
