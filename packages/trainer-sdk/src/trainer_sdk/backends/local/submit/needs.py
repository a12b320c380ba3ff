"""What a local job's commands need from the Python they run in, checked before the job starts.

The supervisor resolves ``torchrun``, ``data-cache`` and the fine-tuning engines' commands
(``tune``) to the client's interpreter (its shims), so a job whose command uses one of them fails
minutes later inside the process when the module is missing; so does a job on an engine's runtime
whose Python lacks the engine. Checking first turns that into one error that names the install
command.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib.util import find_spec
from typing import Any, Final

from trainer_sdk import constants
from trainer_sdk.errors import MissingPackageError
from trainer_sdk.training.engines import ENGINES, engine_named

__all__ = ["COMMAND_NEEDS", "CommandNeed", "check_commands", "check_engine"]


@dataclass(frozen=True)
class CommandNeed:
    """A command a pod may run, the module it imports, and how a user installs that module."""

    command: str
    module: str
    distribution: str  # the requirement name that provides it in packages_to_install
    install: str


COMMAND_NEEDS: Final = (
    CommandNeed("torchrun", "torch", "torch", 'pip install "trainer-sdk[torch]"'),
    CommandNeed(
        "data-cache", "trainer_data_cache", "trainer-data-cache", "pip install trainer-data-cache"
    ),
    *(
        CommandNeed(command, engine.module, engine.module, engine.install)
        for engine in ENGINES
        for command in engine.commands
    ),
)
_REQUIREMENT_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def _uses(command: Iterable[str], name: str) -> bool:
    """Whether any argument of ``command`` runs ``name`` as a word (``bash -c '... torchrun'``)."""
    word = re.compile(rf"(?<![\w./-]){re.escape(name)}(?![\w.-])")
    return any(word.search(argument) for argument in command)


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _importable(python: str, module: str) -> bool:
    if python == sys.executable:
        return find_spec(module) is not None
    probe = f"import importlib.util, sys; sys.exit(importlib.util.find_spec({module!r}) is None)"
    return subprocess.run([python, "-c", probe], capture_output=True, check=False).returncode == 0


def check_commands(
    commands: Iterable[Iterable[str]],
    python: str,
    packages: Iterable[str] = (),
    needs: Iterable[CommandNeed] = COMMAND_NEEDS,
) -> None:
    """Raise MissingPackageError for the first command in ``commands`` whose module ``python``
    cannot import, unless ``packages`` (the job's packages_to_install) provides it."""
    installed = set()
    for requirement in packages:
        match = _REQUIREMENT_NAME.match(requirement.strip())
        if match:
            installed.add(_normalise(match[0]))
    listed = [tuple(command) for command in commands]
    for need in needs:
        if _normalise(need.distribution) in installed:
            continue
        if any(_uses(command, need.command) for command in listed) and not _importable(
            python, need.module
        ):
            raise MissingPackageError(need.command, need.module, python, need.install)


def check_engine(runtime: Mapping[str, Any], python: str) -> None:
    """Raise MissingPackageError when ``runtime`` runs a fine-tuning engine (its framework label)
    that ``python`` cannot import."""
    labels = (runtime.get("metadata") or {}).get("labels") or {}
    engine = engine_named(str(labels.get(constants.RUNTIME_FRAMEWORK_LABEL, "")))
    if engine is not None and not _importable(python, engine.module):
        raise MissingPackageError(engine.name, engine.module, python, engine.install)
