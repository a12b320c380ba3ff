"""``python -m mpi_runtime.with_start_report CMD...``: report this rank's start, then exec CMD.

A module of its own, not imported by the package, so ``-m`` runs it without a second import.
"""

from __future__ import annotations

import os
import sys

from mpi_runtime.rank_starts import report_start_or_warn

if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("mpi_runtime.with_start_report: error: expected a command to run")
    report_start_or_warn(os.environ, "mpi_runtime.with_start_report")
    os.execvp(sys.argv[1], sys.argv[1:])
