"""The MPI launcher: hostfiles, SSH keys and mpirun commands for Open MPI, Intel MPI and MPICH.

Skeleton: this package has no public API yet; its issue will add it.
"""

__all__: list[str] = []
