"""Wall time of ``trainer --help`` and ``trainer list`` (50 finished local jobs), before and after.

"before" runs the trainer-sdk sources of ``--baseline`` (a git revision, exported with ``git
archive`` to a temporary folder and put first on ``PYTHONPATH``); "after" runs this tree's.
Each command runs ``--repeat`` times per side, alternating; the table shows the medians.

    python packages/trainer-sdk/benchmarks/bench_cli.py [--baseline ef5bc6c] [--repeat 5]
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from bench_job_list import JOB, clone_jobs
from trainer_sdk import LocalBackendConfig, TrainerClient

PACKAGE = Path(__file__).resolve().parents[1]
SOURCES = "packages/trainer-sdk/src"


def export(revision: str, into: Path) -> Path:
    """The trainer-sdk sources of ``revision`` under ``into``."""
    archive = subprocess.run(
        ["git", "archive", "--format=tar", revision, SOURCES],
        check=True,
        capture_output=True,
        cwd=PACKAGE.parents[1],
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into / SOURCES


def seconds(source: Path, root: Path, *args: str) -> float:
    env = {**os.environ, "PYTHONPATH": f"{source}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    entry = "from trainer_sdk.cli import main; main()"  # what the trainer console script runs
    command = [sys.executable, "-c", entry, "--backend", "local", "--root", str(root)]
    started = time.perf_counter()
    subprocess.run([*command, *args], check=True, capture_output=True, env=env)
    return time.perf_counter() - started


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
        print(f"{'command':<24}{'before':>10}{'after':>10}")
        for args in (("--help",), ("list",)):
            runs: dict[str, list[float]] = {side: [] for side in sides}
            for _ in range(arguments.repeat):
                for side, source in sides.items():
                    runs[side].append(seconds(source, root, *args))
            shown = " ".join(("trainer", *args))
            medians = [f"{statistics.median(runs[side]):.2f} s" for side in sides]
            print(f"{shown:<24}{medians[0]:>10}{medians[1]:>10}")


if __name__ == "__main__":
    main()
