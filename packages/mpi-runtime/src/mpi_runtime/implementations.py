"""The MPI implementations this package knows, and how their names are spelled.

The CRD field ``mlPolicy.mpi.mpiImplementation`` uses ``OpenMPI``, ``Intel`` and ``MPICH`` (and the
empty string, which the CRD defaults to ``OpenMPI``); the ``mpi-launch`` command line uses
``openmpi``, ``intel`` and ``mpich``. Both spellings, in any letter case, parse to the same member.

Open MPI 4 and 5 are one implementation here: everything this package emits for ``OpenMPI`` works
with both (see ``launcher_envs``).
"""

from __future__ import annotations

from enum import Enum
from typing import Final, TypeAlias

from mpi_runtime.errors import InvalidArgumentError

__all__ = ["Implementation", "ImplementationLike", "parse_implementation"]


class Implementation(str, Enum):
    """An MPI implementation; the value is the CRD enum spelling."""

    OPENMPI = "OpenMPI"
    INTEL = "Intel"
    MPICH = "MPICH"


ImplementationLike: TypeAlias = Implementation | str

_BY_LOWER_NAME: Final = {member.value.lower(): member for member in Implementation}


def parse_implementation(value: ImplementationLike, argument: str = "impl") -> Implementation:
    """The implementation named by ``value`` (CRD or CLI spelling, any case; "" means OpenMPI)."""
    if isinstance(value, Implementation):
        return value
    if not isinstance(value, str):
        raise InvalidArgumentError(argument, f"expected an MPI implementation name, got {value!r}")
    if value == "":
        return Implementation.OPENMPI
    try:
        return _BY_LOWER_NAME[value.lower()]
    except KeyError:
        raise InvalidArgumentError(
            argument,
            f"expected one of 'OpenMPI', 'Intel', 'MPICH' (or openmpi|intel|mpich), got {value!r}",
        ) from None
