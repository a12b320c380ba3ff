"""The core set on one GPU in one command: prints the tables, writes JSON to $OUT if set.

    python packages/gems-kernels/benchmarks/run_h200.py            # on the GPU machine
    TRITON_INTERPRET=1 python packages/gems-kernels/benchmarks/run_h200.py --smoke   # here

Competitors: wheels that ``fetch_competitors.sh`` put in ``.bench-wheels/`` at the repository
root are installed (``pip --no-deps --no-index``) into a temporary directory first; whatever
then imports (flag-gems, liger-kernel) is compared in the same run, the rest shows as "-".

After the per-op tables, the end-to-end case (``end_to_end.py``): a Llama-style training step in
tokens/s on ATen and on gems (``--only llama_step`` runs just that one), then the fused loss
(``fused_loss.py``): linear + cross-entropy at 4096 x 32000 x 1024, float32 and bfloat16, peak
memory and time against ATen, the fused products on gems (``--only fused_loss``), then the model
zoo's training steps (``zoo_steps.py``): per model, milliseconds per bfloat16 step on ATen and on
gems at GPU sizes (``--only zoo``; ``zoo_steps.py --models ...`` for a few). The zoo's U-Net
needs diffusers, which the GPU image lacks: ``fetch_competitors.sh`` puts its wheel beside the
competitors'.

Stops starting new cases after --deadline seconds (default 420) so the whole run stays under
eight minutes including Triton compilation; kernels compile into GEMS_CACHE_DIR / Triton's cache.
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from pathlib import Path

# The device machine gets a bare checkout: the package is imported from the source tree.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import competitors
import fused_loss
import torch
from cases import core_cases, fused_cases
from end_to_end import as_json, format_end_to_end, run_end_to_end
from harness import Case, main
from vision_cases import vision_cases
from zoo_steps import SMOKE_MODELS
from zoo_steps import main as zoo_steps

WHEELS = Path(__file__).resolve().parents[3] / ".bench-wheels"


def h200_cases(smoke: bool) -> list[Case]:
    """The core set, the fused ops that the competitors have and the vision ops, bfloat16
    cases first (if the deadline stops the run, float32 cases are the ones left out)."""
    return sorted(
        [*core_cases(smoke), *fused_cases(smoke), *vision_cases(smoke)],
        key=lambda c: c.dtype != torch.bfloat16,
    )


def end_to_end(smoke: bool) -> bool:
    """The Llama-style training step on ATen and on gems; writes $OUT/gems_llama_step_h200.json.
    Returns whether the losses agreed."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=RuntimeWarning)
        results = run_end_to_end(smoke)
    print()
    print(format_end_to_end(results), flush=True)
    out_dir = os.environ.get("OUT")
    if out_dir:
        target = Path(out_dir) / "gems_llama_step_h200.json"
        target.write_text(json.dumps(as_json(results), indent=2))
        print(f"wrote {target}")
    return all(r.matches for r in results)


def fused_loss_case(smoke: bool) -> bool:
    """The chunked linear + cross-entropy against ATen's, in float32 and bfloat16; writes
    $OUT/gems_fused_loss.json (the last one run). Returns whether both agreed."""
    shape = ["--tokens", "256", "--vocab", "1000", "--hidden", "64"] if smoke else []
    gems = [] if smoke else ["--gems"]  # the interpreter's mm is too slow for --gems here
    agreed = True
    for dtype in ("float32", "bfloat16"):
        print(flush=True)
        agreed &= fused_loss.main([*shape, *gems, "--dtype", dtype, "--repeat", "3"]) == 0
    return agreed


def zoo_case(smoke: bool) -> bool:
    """The zoo's steps on ATen and on gems (two models under ``smoke``); writes
    $OUT/gems_zoo_steps_h200.json. Returns whether every model's losses agreed."""
    print(flush=True)
    return zoo_steps(["--smoke", "--models", *SMOKE_MODELS] if smoke else []) == 0


_SEPARATE = ("llama_step", "fused_loss", "zoo")

if __name__ == "__main__":
    print(competitors.install_wheels(WHEELS), flush=True)
    only = sys.argv[sys.argv.index("--only") + 1 :] if "--only" in sys.argv else None
    per_op = only is None or any(name not in _SEPARATE for name in only)
    status = main(h200_cases, "gems_core_h200", rivals_for=competitors.load) if per_op else 0
    if (only is None or "llama_step" in only) and not end_to_end("--smoke" in sys.argv):
        status = 1
    if (only is None or "fused_loss" in only) and not fused_loss_case("--smoke" in sys.argv):
        status = 1
    if (only is None or "zoo" in only) and not zoo_case("--smoke" in sys.argv):
        status = 1
    sys.exit(status)
