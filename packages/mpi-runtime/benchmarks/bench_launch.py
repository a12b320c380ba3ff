"""Wall time of a 4-rank mpi4py hello: through ``mpi-launch`` against bare ``mpirun``.

    python packages/mpi-runtime/benchmarks/bench_launch.py [--repeats N]

Both commands run the same script with the same process count, interleaved so that machine load
hits both alike; the table shows the median and best of N runs and the ratio mpi-launch / mpirun.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HELLO = """\
from mpi4py import MPI
comm = MPI.COMM_WORLD
assert comm.allreduce(1) == comm.size
"""


def commands(script: Path) -> dict[str, list[str]]:
    """The two ways of running ``script`` on 4 ranks of this machine."""
    as_root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
    mpi_launch = Path(sys.executable).parent / "mpi-launch"
    return {
        "mpirun -np 4 python -m mpi4py": [
            "mpirun", *as_root, "--oversubscribe", "-np", "4",
            sys.executable, "-m", "mpi4py", str(script),
        ],
        "mpi-launch --np 4": [
            str(mpi_launch), "--np", "4", "--oversubscribe", "--", sys.executable, str(script),
        ],
    }  # fmt: skip


def time_once(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, timeout=300)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        script = Path(directory) / "hello.py"
        script.write_text(HELLO)
        runs = commands(script)
        for argv in runs.values():  # warm the page cache once for each
            time_once(argv)
        times: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(args.repeats):
            for name, argv in runs.items():
                times[name].append(time_once(argv))
    baseline = statistics.median(times["mpirun -np 4 python -m mpi4py"])
    print(f"4-rank mpi4py hello, {args.repeats} runs each, {os.cpu_count()} CPUs")
    print(f"{'command':<34}{'median s':>10}{'best s':>10}{'ratio':>8}")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:<34}{median:>10.3f}{min(values):>10.3f}{median / baseline:>8.2f}")


if __name__ == "__main__":
    main()
