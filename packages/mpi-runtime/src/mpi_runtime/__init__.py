"""The MPI launcher: hostfiles, SSH keys and mpirun commands for Open MPI, Intel MPI and MPICH.

Names load on first use: importing the package imports none of its modules, so that
``mpi-launch`` loads only what a launch needs before it starts mpirun.
"""

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
    from mpi_runtime.commands import mpirun_command, shell_command, with_mpi4py
    from mpi_runtime.errors import (
        HostNotReadyError,
        InvalidArgumentError,
        MPIRuntimeError,
        RanksNotStartedError,
    )
    from mpi_runtime.frameworks import DEEPSPEED_LAUNCHERS, deepspeed_command, mlx_launch_command
    from mpi_runtime.hostfiles import HostSlots, hostfile, parse_hostfile, rank_hosts
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

# Each public name and the module that defines it.
_MODULES: dict[str, str] = {
    "DEEPSPEED_LAUNCHERS": "mpi_runtime.frameworks",
    "HostNotReadyError": "mpi_runtime.errors",
    "HostSlots": "mpi_runtime.hostfiles",
    "Implementation": "mpi_runtime.implementations",
    "ImplementationLike": "mpi_runtime.implementations",
    "InvalidArgumentError": "mpi_runtime.errors",
    "LaunchPlan": "mpi_runtime.launches",
    "MASTER_PORT": "mpi_runtime.rank_envs",
    "MPIRuntimeError": "mpi_runtime.errors",
    "RANK_ENV_SOURCES": "mpi_runtime.rank_envs",
    "RESERVED_ENV_NAMES": "mpi_runtime.launcher_envs",
    "RanksNotStartedError": "mpi_runtime.errors",
    "SSHKeyPair": "mpi_runtime.ssh_keys",
    "SSH_ARGS": "mpi_runtime.launcher_envs",
    "SSH_ARGS_ENV_NAMES": "mpi_runtime.launcher_envs",
    "SSH_AUTH_FILES": "mpi_runtime.ssh_keys",
    "SSH_AUTH_FILE_MODE": "mpi_runtime.ssh_keys",
    "SSH_PORT": "mpi_runtime.ssh_configs",
    "SSH_PRIVATE_KEY_FILE": "mpi_runtime.ssh_keys",
    "SSH_SECRET_PRIVATE_KEY": "mpi_runtime.ssh_keys",
    "SSH_SECRET_PUBLIC_KEY": "mpi_runtime.ssh_keys",
    "START_REPORT_ENV": "mpi_runtime.rank_starts",
    "START_TIMEOUT_ENV": "mpi_runtime.launches",
    "START_TIMEOUT_S": "mpi_runtime.launches",
    "StartWatch": "mpi_runtime.rank_starts",
    "TERMINATION_LOG": "mpi_runtime.launches",
    "deepspeed_command": "mpi_runtime.frameworks",
    "detect_implementation": "mpi_runtime.launches",
    "exec_with_rank_env": "mpi_runtime.rank_envs",
    "find_sshd": "mpi_runtime.workers",
    "generate_ssh_keypair": "mpi_runtime.ssh_keys",
    "hostfile": "mpi_runtime.hostfiles",
    "is_this_machine": "mpi_runtime.readiness",
    "launch": "mpi_runtime.launches",
    "launcher_env": "mpi_runtime.launcher_envs",
    "mlx_launch_command": "mpi_runtime.frameworks",
    "mpirun_command": "mpi_runtime.commands",
    "parse_hostfile": "mpi_runtime.hostfiles",
    "parse_implementation": "mpi_runtime.implementations",
    "plan_launch": "mpi_runtime.launches",
    "prepare_sshd": "mpi_runtime.workers",
    "private_identity": "mpi_runtime.ssh_keys",
    "probe_sshd": "mpi_runtime.readiness",
    "rank_env": "mpi_runtime.rank_envs",
    "rank_hosts": "mpi_runtime.hostfiles",
    "report_start": "mpi_runtime.rank_starts",
    "reserved_env_names": "mpi_runtime.launcher_envs",
    "run_sshd": "mpi_runtime.workers",
    "shell_command": "mpi_runtime.commands",
    "ssh_client_config": "mpi_runtime.ssh_configs",
    "ssh_secret_data": "mpi_runtime.ssh_keys",
    "sshd_config": "mpi_runtime.ssh_configs",
    "to_mpi_launch": "mpi_runtime.launcher_lines",
    "wait_for_hosts": "mpi_runtime.readiness",
    "with_mpi4py": "mpi_runtime.commands",
    "write_ssh_auth": "mpi_runtime.ssh_keys",
}

__all__ = [
    "DEEPSPEED_LAUNCHERS",
    "MASTER_PORT",
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


def __getattr__(name: str) -> _typing.Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
