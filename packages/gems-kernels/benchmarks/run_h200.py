"""The core set on one GPU in one command: prints the tables, writes JSON to $OUT if set.

    python packages/gems-kernels/benchmarks/run_h200.py            # on the GPU machine
    TRITON_INTERPRET=1 python packages/gems-kernels/benchmarks/run_h200.py --smoke   # here

Competitors: wheels that ``fetch_competitors.sh`` put in ``.bench-wheels/`` at the repository
root are installed (``pip --no-deps --no-index``) into a temporary directory first; whatever
then imports (flag-gems, liger-kernel) is compared in the same run, the rest shows as "-".

Stops starting new cases after --deadline seconds (default 420) so the whole run stays under
eight minutes including Triton compilation; kernels compile into GEMS_CACHE_DIR / Triton's cache.
"""

from __future__ import annotations

import sys
from pathlib import Path

# The device machine gets a bare checkout: the package is imported from the source tree.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import competitors
import torch
from cases import core_cases, fused_cases
from harness import Case, main

WHEELS = Path(__file__).resolve().parents[3] / ".bench-wheels"


def h200_cases(smoke: bool) -> list[Case]:
    """The core set and the fused ops that the competitors have, bfloat16 cases first (if the
    deadline stops the run, float32 cases are the ones left out)."""
    return sorted(
        [*core_cases(smoke), *fused_cases(smoke)], key=lambda c: c.dtype != torch.bfloat16
    )


if __name__ == "__main__":
    print(competitors.install_wheels(WHEELS), flush=True)
    sys.exit(main(h200_cases, "gems_core_h200", rivals_for=competitors.load))
