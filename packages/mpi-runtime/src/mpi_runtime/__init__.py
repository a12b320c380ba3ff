"""The MPI launcher: hostfiles, SSH keys and mpirun commands for Open MPI, Intel MPI and MPICH."""

from mpi_runtime.errors import HostNotReadyError, InvalidArgumentError, MPIRuntimeError
from mpi_runtime.hostfiles import HostSlots, hostfile, parse_hostfile, rank_hosts
from mpi_runtime.implementations import Implementation, ImplementationLike, parse_implementation
from mpi_runtime.launcher_envs import (
    RESERVED_ENV_NAMES,
    SSH_ARGS,
    SSH_ARGS_ENV_NAMES,
    launcher_env,
    reserved_env_names,
)
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

__all__ = [
    "RESERVED_ENV_NAMES",
    "SSH_ARGS",
    "SSH_ARGS_ENV_NAMES",
    "SSH_AUTH_FILES",
    "SSH_AUTH_FILE_MODE",
    "SSH_PRIVATE_KEY_FILE",
    "SSH_SECRET_PRIVATE_KEY",
    "SSH_SECRET_PUBLIC_KEY",
    "HostNotReadyError",
    "HostSlots",
    "Implementation",
    "ImplementationLike",
    "InvalidArgumentError",
    "MPIRuntimeError",
    "SSHKeyPair",
    "generate_ssh_keypair",
    "hostfile",
    "launcher_env",
    "parse_hostfile",
    "parse_implementation",
    "private_identity",
    "rank_hosts",
    "reserved_env_names",
    "ssh_secret_data",
    "write_ssh_auth",
]
