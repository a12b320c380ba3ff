"""Reading launcher command lines: ``mpirun``, ``deepspeed`` (its MPI launchers) and
``mpi-launch`` lines translated into one ``mpi-launch`` argv.

The inverse of ``commands`` and ``frameworks``, which build such lines: a launcher container's
command, written for a cluster, runs through ``mpi-launch`` on one machine (the SDK's local
backend). Options that only place ranks on cores (binding, mapping) are dropped, options that
change nothing on one machine are ignored, and anything else that is not understood is refused
with an ``InvalidArgumentError`` naming its position, never passed on silently.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import PurePath
from typing import Final

from mpi_runtime.errors import InvalidArgumentError

__all__ = ["to_mpi_launch"]

_HOSTFILE_OPTIONS: Final = frozenset(
    {"--hostfile", "-hostfile", "--machinefile", "-machinefile", "-f"}
)
_NP_OPTIONS: Final = frozenset({"-np", "--np", "-n", "-c"})
_PASSED_FLAGS: Final = frozenset({"--oversubscribe", "-oversubscribe", "--tag-output"})
_DROPPED_FLAGS: Final = frozenset(
    {"--allow-run-as-root", "-allow-run-as-root", "--report-bindings", "-report-bindings"}
)
_BINDING_OPTIONS: Final = frozenset(
    {"--bind-to", "-bind-to", "--map-by", "-map-by", "--rank-by", "-rank-by"}
)
# deepspeed's runner: options that take a value, its MPI launchers, and options that change
# nothing on this machine (the job's MASTER_ADDR/PORT and ssh port are the local backend's).
_DEEPSPEED_VALUE_OPTIONS: Final = frozenset(
    {
        "-H", "--hostfile", "--launcher", "--launcher_args", "--master_addr", "--master_port",
        "--ssh_port", "--log_level", "-i", "--include", "-e", "--exclude", "--num_nodes",
        "--num_gpus", "--num_accelerators", "--node_rank", "--enable_each_rank_log",
        "--autotuning", "--bind_core_list", "--venv_script",
    }
)  # fmt: skip
_DEEPSPEED_MPI_LAUNCHERS: Final = frozenset({"openmpi", "mpich", "impi"})
_DEEPSPEED_IGNORED: Final = frozenset(
    {
        "--master_addr", "--master_port", "--ssh_port", "--no_ssh_check", "--force_multi",
        "--no_local_rank", "--log_level", "-q", "--quiet",
    }
)  # fmt: skip


def _mpirun_options(
    args: Sequence[str], where: str, offset: int = 0
) -> tuple[list[str], dict[str, str], int]:
    """Leading mpirun options of ``args`` as mpi-launch options and env; where the program starts.

    ``offset`` is the index of ``args[0]`` in the command, for error paths."""
    options: list[str] = []
    env: dict[str, str] = {}
    index = 0
    while index < len(args) and args[index].startswith("-") and args[index] != "--":
        option = args[index]
        value = args[index + 1] if index + 1 < len(args) else ""
        if option in _HOSTFILE_OPTIONS:
            options += ["--hostfile", value]
        elif option in _NP_OPTIONS:
            options += ["--np", value]
        elif option == "-x":
            name, has_value, assigned = value.partition("=")
            if has_value:
                env[name] = assigned
            options += ["-x", name]
        elif option in ("--mca", "-mca") and index + 2 < len(args):
            env[f"OMPI_MCA_{value}"] = args[index + 2]
            index += 1
        elif option in _BINDING_OPTIONS:
            pass  # ranks share this machine's cores: binding and mapping policies do not apply
        elif option in _PASSED_FLAGS:
            options.append("--tag-output" if option == "--tag-output" else "--oversubscribe")
            index -= 1
        elif option in _DROPPED_FLAGS:
            index -= 1
        else:
            raise InvalidArgumentError(
                f"{where}[{offset + index}]",
                f"mpirun option {option!r} is not translated for the "
                "local backend (known: --hostfile, -np, -x, --mca, --bind-to, --map-by, "
                "--rank-by, --oversubscribe, --tag-output, --report-bindings)",
            )
        index += 2
    if index < len(args) and args[index] == "--":
        index += 1
    return options, env, index


def _deepspeed_program(args: Sequence[str], where: str) -> tuple[list[str], list[str], list[str]]:
    """``deepspeed [options] SCRIPT ARGS`` (its MPI launchers) as (mpirun options, hostfile
    options, program): what DeepSpeed's own runner would hand to mpirun."""
    hostfile: list[str] = []
    launcher, launcher_args = "pdsh", ""  # deepspeed's defaults
    python = ["python"]
    index = 0
    while index < len(args) and args[index].startswith("-"):
        option, _, inline = args[index].partition("=")
        takes_value = option in _DEEPSPEED_VALUE_OPTIONS
        value = inline or (args[index + 1] if takes_value and index + 1 < len(args) else "")
        if option in ("-H", "--hostfile"):
            hostfile = ["--hostfile", value]
        elif option == "--launcher":
            launcher = value
        elif option == "--launcher_args":
            launcher_args = value
        elif option == "--module":
            python = ["python", "-m"]
        elif option == "--no_python":
            python = []
        elif option not in _DEEPSPEED_IGNORED:
            raise InvalidArgumentError(
                f"{where}[{index + 1}]",
                f"deepspeed option {option!r} is not translated for the "
                "local backend (known: --hostfile, --launcher, --launcher_args, --module, "
                "--no_python, and ones that change nothing here: "
                f"{', '.join(sorted(_DEEPSPEED_IGNORED))})",
            )
        index += 2 if takes_value and not inline else 1
    if launcher.lower() not in _DEEPSPEED_MPI_LAUNCHERS:
        raise InvalidArgumentError(
            where,
            f"deepspeed --launcher {launcher!r} is not an MPI launcher; the local "
            f"backend runs {', '.join(sorted(_DEEPSPEED_MPI_LAUNCHERS))}",
        )
    if index >= len(args):
        raise InvalidArgumentError(where, "deepspeed has no script to run")
    return shlex.split(launcher_args), hostfile, [*python, *args[index:]]


def to_mpi_launch(
    command: Sequence[str], where: str, local_options: Sequence[str], *, wait_timeout: float
) -> tuple[list[str], dict[str, str]]:
    """``mpirun [options] CMD``, ``deepspeed [options] SCRIPT`` or ``mpi-launch [options] -- CMD``
    as an ``mpi-launch`` argv with ``local_options``, and env the translated options set
    (``-x NAME=VALUE``, ``--mca``). ``where`` names the command in errors (a field path)."""
    program = PurePath(command[0]).name if command else ""
    launch = ["mpi-launch", "--wait-timeout", f"{wait_timeout:g}"]
    if program == "mpi-launch":
        rest = list(command[1:])
        split = rest.index("--") if "--" in rest else len(rest)
        return [*launch, *rest[:split], *local_options, "--", *rest[split + 1 :]], {}
    if program == "deepspeed":
        launcher_args, hostfile, target = _deepspeed_program(command[1:], where)
        options, env, used = _mpirun_options(launcher_args, f"{where} --launcher_args")
        if used < len(launcher_args):
            raise InvalidArgumentError(
                f"{where} --launcher_args",
                f"expected mpirun options only, got {launcher_args[used]!r}",
            )
        return [*launch, *hostfile, *options, *local_options, "--", *target], env
    if program != "mpirun":
        raise InvalidArgumentError(
            where,
            f"the local backend runs an MPI launcher whose command starts with mpirun, "
            f"deepspeed or mpi-launch, got {command[0] if command else 'no command'!r}",
        )
    options, env, used = _mpirun_options(command[1:], where, offset=1)
    if 1 + used >= len(command):
        raise InvalidArgumentError(where, "mpirun has no program to run")
    return [*launch, *options, *local_options, "--", *command[1 + used :]], env
