"""``python -m mpi_runtime.with_rank_env CMD...``: run CMD with this rank's torch env.

A module of its own, not imported by the package, so ``-m`` runs it without a second import.
"""

from __future__ import annotations

import sys

from mpi_runtime.rank_envs import exec_with_rank_env

if __name__ == "__main__":
    exec_with_rank_env(sys.argv[1:])
