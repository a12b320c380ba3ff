"""The MPI launcher: hostfiles, SSH keys and mpirun commands for Open MPI, Intel MPI and MPICH.

Names load on first use (PEP 562): ``mpi-launch`` imports only the modules a launch needs,
which keeps its start close to bare ``mpirun``'s.
"""

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mpi_runtime.commands import mpirun_command, shell_command, with_mpi4py
    from mpi_runtime.errors import (
        HostNotReadyError,
        InvalidArgumentError,
        MPIRuntimeError,
        RanksNotStartedError,
    )
    from mpi_runtime.frameworks import DEEPSPEED_LAUNCHERS, deepspeed_command, mlx_launch_command
    from mpi_runtime.hostfiles import (
        MAX_SLOTS,
        HostSlots,
        hostfile,
        parse_hostfile,
        rank_hosts,
        read_hostfile,
    )
    from mpi_runtime.implementations import Implementation, ImplementationLike, parse_implementation
    from mpi_runtime.launcher_envs import (
        RESERVED_ENV_NAMES,
        SSH_ARGS,
        SSH_ARGS_ENV_NAMES,
        launcher_env,
        reserved_env_names,
    )
    from mpi_runtime.launcher_lines import to_mpi_launch
    from mpi_runtime.launches import (
        START_TIMEOUT_ENV,
        START_TIMEOUT_S,
        TERMINATION_LOG,
        LaunchPlan,
        detect_implementation,
        launch,
        plan_launch,
    )
    from mpi_runtime.rank_envs import MASTER_PORT, RANK_ENV_SOURCES, exec_with_rank_env, rank_env
    from mpi_runtime.rank_starts import START_REPORT_ENV, StartWatch, report_start
    from mpi_runtime.readiness import is_this_machine, probe_sshd, wait_for_hosts
    from mpi_runtime.ssh_configs import SSH_PORT, ssh_client_config, sshd_config
    from mpi_runtime.ssh_keys import (
        SSH_AUTH_FILE_MODE,
        SSH_AUTH_FILES,
        SSH_PRIVATE_KEY_FILE,
        SSH_SECRET_PRIVATE_KEY,
        SSH_SECRET_PUBLIC_KEY,
        SSHKeyPair,
        generate_ssh_keypair,
        private_identity,
        ssh_secret_data,
        write_ssh_auth,
    )
    from mpi_runtime.workers import find_sshd, prepare_sshd, run_sshd

_EXPORTS: dict[str, tuple[str, ...]] = {
    "commands": ("mpirun_command", "shell_command", "with_mpi4py"),
    "errors": (
        "HostNotReadyError",
        "InvalidArgumentError",
        "MPIRuntimeError",
        "RanksNotStartedError",
    ),
    "frameworks": ("DEEPSPEED_LAUNCHERS", "deepspeed_command", "mlx_launch_command"),
    "hostfiles": (
        "MAX_SLOTS",
        "HostSlots",
        "hostfile",
        "parse_hostfile",
        "rank_hosts",
        "read_hostfile",
    ),
    "implementations": ("Implementation", "ImplementationLike", "parse_implementation"),
    "launcher_envs": (
        "RESERVED_ENV_NAMES",
        "SSH_ARGS",
        "SSH_ARGS_ENV_NAMES",
        "launcher_env",
        "reserved_env_names",
    ),
    "launcher_lines": ("to_mpi_launch",),
    "launches": (
        "START_TIMEOUT_ENV",
        "START_TIMEOUT_S",
        "TERMINATION_LOG",
        "LaunchPlan",
        "detect_implementation",
        "launch",
        "plan_launch",
    ),
    "rank_envs": ("MASTER_PORT", "RANK_ENV_SOURCES", "exec_with_rank_env", "rank_env"),
    "rank_starts": ("START_REPORT_ENV", "StartWatch", "report_start"),
    "readiness": ("is_this_machine", "probe_sshd", "wait_for_hosts"),
    "ssh_configs": ("SSH_PORT", "ssh_client_config", "sshd_config"),
    "ssh_keys": (
        "SSH_AUTH_FILE_MODE",
        "SSH_AUTH_FILES",
        "SSH_PRIVATE_KEY_FILE",
        "SSH_SECRET_PRIVATE_KEY",
        "SSH_SECRET_PUBLIC_KEY",
        "SSHKeyPair",
        "generate_ssh_keypair",
        "private_identity",
        "ssh_secret_data",
        "write_ssh_auth",
    ),
    "workers": ("find_sshd", "prepare_sshd", "run_sshd"),
}
"""The public names of each submodule."""
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = [
    "DEEPSPEED_LAUNCHERS",
    "MASTER_PORT",
    "MAX_SLOTS",
    "RANK_ENV_SOURCES",
    "RESERVED_ENV_NAMES",
    "SSH_ARGS",
    "SSH_ARGS_ENV_NAMES",
    "SSH_AUTH_FILES",
    "SSH_AUTH_FILE_MODE",
    "SSH_PORT",
    "SSH_PRIVATE_KEY_FILE",
    "SSH_SECRET_PRIVATE_KEY",
    "SSH_SECRET_PUBLIC_KEY",
    "START_REPORT_ENV",
    "START_TIMEOUT_ENV",
    "START_TIMEOUT_S",
    "TERMINATION_LOG",
    "HostNotReadyError",
    "HostSlots",
    "Implementation",
    "ImplementationLike",
    "InvalidArgumentError",
    "LaunchPlan",
    "MPIRuntimeError",
    "RanksNotStartedError",
    "SSHKeyPair",
    "StartWatch",
    "__version__",
    "deepspeed_command",
    "detect_implementation",
    "exec_with_rank_env",
    "find_sshd",
    "generate_ssh_keypair",
    "hostfile",
    "is_this_machine",
    "launch",
    "launcher_env",
    "mlx_launch_command",
    "mpirun_command",
    "parse_hostfile",
    "parse_implementation",
    "plan_launch",
    "prepare_sshd",
    "private_identity",
    "probe_sshd",
    "rank_env",
    "rank_hosts",
    "read_hostfile",
    "report_start",
    "reserved_env_names",
    "run_sshd",
    "shell_command",
    "ssh_client_config",
    "ssh_secret_data",
    "sshd_config",
    "to_mpi_launch",
    "wait_for_hosts",
    "with_mpi4py",
    "write_ssh_auth",
]


def __getattr__(name: str) -> object:
    """A public name, imported from its submodule on first use; ``__version__`` from the
    package metadata (see ``_versions``)."""
    if name == "__version__":
        return importlib.import_module("mpi_runtime._versions").package_version()
    if name not in _MODULE_OF:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"mpi_runtime.{_MODULE_OF[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return list(__all__)
