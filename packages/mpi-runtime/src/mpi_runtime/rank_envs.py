"""The env torch.distributed and DeepSpeed read, from the env each MPI gives its ranks.

Open MPI sets ``OMPI_COMM_WORLD_{RANK,SIZE,LOCAL_RANK,LOCAL_SIZE}``; Hydra (MPICH and Intel MPI)
sets ``PMI_RANK``, ``PMI_SIZE``, ``MPI_LOCALRANKID``, ``MPI_LOCALNRANKS``. ``MASTER_ADDR`` is not
guessed on the rank (no ``hostname -I``): ``mpi-launch`` sets it to the first hostfile host, which
runs rank 0, and forwards it with ``MASTER_PORT``. When ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``,
``MASTER_ADDR`` and ``MASTER_PORT`` are all set, DeepSpeed's ``init_distributed`` uses them as they
are instead of discovering them through mpi4py.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Final

from mpi_runtime.errors import InvalidArgumentError

__all__ = ["MASTER_PORT", "RANK_ENV_SOURCES", "exec_with_rank_env", "rank_env"]

MASTER_PORT: Final = 29500
"""Default rendezvous port of rank 0 (torch.distributed's usual default)."""

RANK_ENV_SOURCES: Final[Mapping[str, tuple[str, ...]]] = {
    "RANK": ("OMPI_COMM_WORLD_RANK", "PMI_RANK"),
    "WORLD_SIZE": ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE"),
    "LOCAL_RANK": ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID"),
    "LOCAL_WORLD_SIZE": ("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"),
}
"""Each torch variable and, in order of preference, the MPI variables it is read from."""


def rank_env(environ: Mapping[str, str]) -> dict[str, str]:
    """RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT for this rank."""
    result: dict[str, str] = {}
    for target, sources in RANK_ENV_SOURCES.items():
        value = next((environ[name] for name in sources if name in environ), None)
        if value is None:
            raise InvalidArgumentError(
                "environ", f"{target}: none of {', '.join(sources)} is set; run under mpirun"
            )
        result[target] = value
    if "MASTER_ADDR" not in environ:
        raise InvalidArgumentError(
            "environ", "MASTER_ADDR is not set; launch with mpi-launch or set it to rank 0's host"
        )
    result["MASTER_ADDR"] = environ["MASTER_ADDR"]
    result["MASTER_PORT"] = environ.get("MASTER_PORT", str(MASTER_PORT))
    return result


def exec_with_rank_env(command: Sequence[str]) -> None:
    """Replace this process with ``command``, its env extended by ``rank_env``."""
    if not command:
        raise InvalidArgumentError("command", "expected a command to run, got none")
    environ = {**os.environ, **rank_env(os.environ)}
    os.execvpe(command[0], list(command), environ)
