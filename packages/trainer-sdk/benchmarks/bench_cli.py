"""Wall time of ``trainer --help`` and ``trainer list`` (50 finished local jobs), before and after.

"before" runs the trainer-sdk sources of ``--baseline`` (a git revision, exported with ``git
archive`` to a temporary folder and put first on ``PYTHONPATH``); "after" runs this tree's.
Each command runs ``--repeat`` times per side, alternating; the table shows the medians of the
wall time and of the CPU time the command used (user + system: what a loaded machine inflates
least).

    python packages/trainer-sdk/benchmarks/bench_cli.py [--baseline ef5bc6c] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_job_list import JOB, clone_jobs
from revisions import export
from trainer_sdk import LocalBackendConfig, TrainerClient

PACKAGE = Path(__file__).resolve().parents[1]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def seconds(source: Path, root: Path, *args: str) -> tuple[float, float]:
    """Wall and CPU seconds of one ``trainer ARGS`` run on ``source``."""
    env = {**os.environ, "PYTHONPATH": f"{source}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    entry = "from trainer_sdk.cli import main; main()"  # what the trainer console script runs
    command = [sys.executable, "-c", entry, "--backend", "local", "--root", str(root)]
    cpu, started = _children_cpu(), time.perf_counter()
    subprocess.run([*command, *args], check=True, capture_output=True, env=env)
    return time.perf_counter() - started, _children_cpu() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="ef5bc6c")
    parser.add_argument("--repeat", type=int, default=5)
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "jobs"
        client = TrainerClient(LocalBackendConfig(root=root))
        client.submit(JOB)
        client.wait_for_job_status("seed", timeout=600)
        clone_jobs(root, 49)
        sides = {
            "before": export(arguments.baseline, Path(scratch) / "before"),
            "after": PACKAGE / "src",
        }
        headers = ("before wall", "after wall", "before CPU", "after CPU")
        print(f"{'command':<18}" + "".join(f"{header:>12}" for header in headers))
        for args in (("--help",), ("list",)):
            runs: dict[str, list[tuple[float, float]]] = {side: [] for side in sides}
            for _ in range(arguments.repeat):
                for side, source in sides.items():
                    runs[side].append(seconds(source, root, *args))
            cells = [
                f"{statistics.median(run[kind] for run in runs[side]):.2f} s"
                for kind in (0, 1)
                for side in sides
            ]
            shown = " ".join(("trainer", *args))
            print(f"{shown:<18}" + "".join(f"{cell:>12}" for cell in cells))


if __name__ == "__main__":
    main()
