"""The core set on one GPU in one command: prints the table, writes JSON to $OUT if set.

    python packages/gems-kernels/benchmarks/run_h200.py            # on the GPU machine
    TRITON_INTERPRET=1 python packages/gems-kernels/benchmarks/run_h200.py --smoke   # here

Stops starting new cases after --deadline seconds (default 420) so the whole run stays under
eight minutes including Triton compilation; kernels compile into GEMS_CACHE_DIR / Triton's cache.
"""

from __future__ import annotations

import sys

from cases import core_cases
from harness import main

if __name__ == "__main__":
    sys.exit(main(core_cases, "gems_core_h200"))
