"""Building ``mpirun`` command lines.

Commands are argv lists, never shell strings, so any argument (spaces, quotes, ``$``, ``;``) reaches
the program unchanged; ``shell_command`` quotes one for a shell when a container wants a string.
Open MPI spells options ``--hostfile``, ``-x NAME``, ``--mca KEY VALUE``; Hydra (Intel MPI and
MPICH) spells them ``-f``, ``-genvlist``, ``-genv NAME VALUE`` and has no MCA parameters.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from collections.abc import Mapping, Sequence
from typing import Final

from mpi_runtime._arguments import require_positive_int
from mpi_runtime.errors import InvalidArgumentError
from mpi_runtime.implementations import Implementation, ImplementationLike, parse_implementation

__all__ = ["mpirun_command", "shell_command", "with_mpi4py"]

_PYTHON_NAME: Final = re.compile(r"python(\d+(\.\d+)*)?")
"""Interpreter names: python, python3, python3.11."""


def _check_env_name(name: str, argument: str) -> str:
    if not name or "=" in name or not (name[0].isalpha() or name[0] == "_"):
        raise InvalidArgumentError(argument, f"expected an environment variable name, got {name!r}")
    if not all(c.isalnum() or c == "_" for c in name):
        raise InvalidArgumentError(argument, f"expected an environment variable name, got {name!r}")
    return name


def mpirun_command(
    impl: ImplementationLike,
    command: Sequence[str],
    *,
    np: int | None = None,
    hostfile: str | None = None,
    forward_env: Sequence[str] = (),
    set_env: Mapping[str, str] | None = None,
    mca: Mapping[str, str] | None = None,
    allow_run_as_root: bool = False,
    oversubscribe: bool = False,
    bind_to: str | None = None,
    tag_output: bool = False,
    mpirun: str = "mpirun",
) -> list[str]:
    """The argv of ``mpirun`` running ``command`` on ``np`` slots (all hostfile slots if None).

    ``forward_env`` names variables copied from the launcher's environment; ``set_env`` sets
    variables on every rank; ``mca`` is Open MPI only.
    """
    implementation = parse_implementation(impl)
    if isinstance(command, str) or not command:
        raise InvalidArgumentError("command", f"expected a non-empty argv list, got {command!r}")
    if np is not None:
        require_positive_int(np, "np")
    for name in forward_env:
        _check_env_name(name, "forward_env")
    for name in set_env or {}:
        _check_env_name(name, "set_env")
    argv = [mpirun]
    if implementation is Implementation.OPENMPI:
        argv += ["-np", str(np)] if np is not None else []
        argv += ["--hostfile", hostfile] if hostfile is not None else []
        argv += ["--allow-run-as-root"] if allow_run_as_root else []
        argv += ["--oversubscribe"] if oversubscribe else []
        argv += ["--bind-to", bind_to] if bind_to is not None else []
        argv += ["--tag-output"] if tag_output else []
        for key, value in (mca or {}).items():
            argv += ["--mca", key, value]
        for name in forward_env:
            argv += ["-x", name]
        for name, value in (set_env or {}).items():
            argv += ["-x", f"{name}={value}"]
    else:
        if mca:
            raise InvalidArgumentError("mca", f"MCA parameters are Open MPI only, not {impl!r}")
        # Hydra runs as root and oversubscribes without being asked, and passes the launcher's
        # whole environment to every rank (-genvall is its default; -genvlist would narrow it).
        argv += ["-n", str(np)] if np is not None else []
        argv += ["-f", hostfile] if hostfile is not None else []
        argv += ["-bind-to", bind_to] if bind_to is not None else []
        argv += ["-prepend-rank"] if tag_output else []
        for name, value in (set_env or {}).items():
            argv += ["-genv", name, value]
    return [*argv, *command]


def with_mpi4py(command: Sequence[str], python: str = sys.executable) -> list[str]:
    """``command`` run through ``python -m mpi4py`` when it is a Python program, else unchanged.

    Under ``-m mpi4py`` an uncaught exception in one rank calls ``MPI_Abort``, so the whole job
    stops with an error instead of the other ranks hanging in their next collective.
    Recognised: ``script.py ...``, ``python[3[.X]] script.py|-m mod|-c code ...``.
    """
    if not command:
        return list(command)
    program, *rest = command
    if program.endswith(".py"):
        return [python, "-m", "mpi4py", *command]
    is_python = _PYTHON_NAME.fullmatch(os.path.basename(program)) is not None
    if is_python and rest and (rest[0] in ("-m", "-c") or rest[0].endswith(".py")):
        if rest[:2] == ["-m", "mpi4py"]:
            return list(command)
        return [program, "-m", "mpi4py", *rest]
    return list(command)


def shell_command(argv: Sequence[str]) -> str:
    """``argv`` as one shell-quoted string (for ``sh -c``)."""
    return shlex.join(argv)
