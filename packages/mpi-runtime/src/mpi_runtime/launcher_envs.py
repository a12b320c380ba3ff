"""Environment for the launcher container: where the hostfile is, how many slots, how to ssh.

Open MPI 4 and 5: Open MPI 4 (ORTE) reads ``OMPI_MCA_orte_*`` and ``OMPI_MCA_plm_rsh_args``; Open
MPI 5 replaced ORTE with PRRTE, which reads ``PRTE_MCA_*`` and silently ignores the ORTE names (so
a job would run every rank on the launcher). Each version ignores the other's variables, so the
``OpenMPI`` env sets both and one runtime works with either image. PRRTE's
``prte_keep_fqdn_hostnames`` is ``false`` on purpose: with it on, PRRTE does not recognise the
launcher's own short pod DNS name and tries to ssh to itself.

Intel MPI reads ``I_MPI_HYDRA_*`` and ``I_MPI_PERHOST``; MPICH's Hydra reads ``HYDRA_*``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from mpi_runtime._arguments import require_positive_int, require_text
from mpi_runtime.implementations import Implementation, ImplementationLike, parse_implementation

__all__ = [
    "RESERVED_ENV_NAMES",
    "SSH_ARGS",
    "SSH_ARGS_ENV_NAMES",
    "launcher_env",
    "reserved_env_names",
]

SSH_ARGS: Final = "-o ConnectionAttempts=10"
"""Extra ssh arguments: retry the connection while a worker's sshd is still starting."""

SSH_ARGS_ENV_NAMES: Final[Mapping[Implementation, tuple[str, ...]]] = {
    Implementation.OPENMPI: ("OMPI_MCA_plm_rsh_args", "PRTE_MCA_plm_ssh_args"),
    Implementation.INTEL: ("I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS",),
    Implementation.MPICH: ("HYDRA_LAUNCHER_EXTRA_ARGS",),
}
"""The variables each implementation reads extra ssh arguments from."""


def launcher_env(impl: ImplementationLike, hostfile_path: str, slots: int) -> dict[str, str]:
    """The launcher's environment for ``impl``, in a fixed order (names as the tools spell them)."""
    implementation = parse_implementation(impl)
    require_positive_int(slots, "slots")
    require_text(hostfile_path, "hostfile_path", "a file path")
    if implementation is Implementation.OPENMPI:
        env = {
            "OMPI_MCA_orte_default_hostfile": hostfile_path,
            "OMPI_MCA_orte_keep_fqdn_hostnames": "true",
            "OMPI_MCA_orte_set_default_slots": str(slots),
            "PRTE_MCA_prte_default_hostfile": hostfile_path,
            "PRTE_MCA_prte_keep_fqdn_hostnames": "false",
            "PRTE_MCA_prte_set_default_slots": str(slots),
        }
    elif implementation is Implementation.INTEL:
        env = {
            "I_MPI_HYDRA_HOST_FILE": hostfile_path,
            "I_MPI_HYDRA_BOOTSTRAP": "ssh",
            "I_MPI_PERHOST": str(slots),
        }
    else:
        env = {
            "HYDRA_HOST_FILE": hostfile_path,
            "HYDRA_LAUNCHER": "ssh",
        }
    env.update(dict.fromkeys(SSH_ARGS_ENV_NAMES[implementation], SSH_ARGS))
    return env


RESERVED_ENV_NAMES: Final[Mapping[Implementation, frozenset[str]]] = {
    implementation: frozenset(launcher_env(implementation, "/etc/mpi/hostfile", 1))
    for implementation in Implementation
}
"""Per implementation, the variables the launcher env sets; a TrainJob must not set them."""


def reserved_env_names(impl: ImplementationLike) -> frozenset[str]:
    """The env names reserved for ``impl`` (what ``launcher_env`` sets)."""
    return RESERVED_ENV_NAMES[parse_implementation(impl)]
