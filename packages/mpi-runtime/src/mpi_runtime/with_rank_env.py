"""``python -m mpi_runtime.with_rank_env CMD...``: run CMD with this rank's torch env.

It first reports the rank's start to ``mpi-launch`` when asked (see ``rank_starts``), so the
launcher's start bound needs no second wrapper. A module of its own, not imported by the
package, so ``-m`` runs it without a second import.
"""

from __future__ import annotations

import os
import sys

from mpi_runtime.rank_envs import exec_with_rank_env
from mpi_runtime.rank_starts import report_start_or_warn

if __name__ == "__main__":
    report_start_or_warn(os.environ, "mpi_runtime.with_rank_env")
    exec_with_rank_env(sys.argv[1:])
