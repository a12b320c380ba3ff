"""Wall time of a 4-rank mpi4py hello: through ``mpi-launch`` against bare ``mpirun``.

    python packages/mpi-runtime/benchmarks/bench_launch.py [--repeats N] [--against SRC]

Both commands run the same script with the same process count, interleaved so that machine load
hits both alike; the table shows the median and best of N runs and the ratio mpi-launch / mpirun.
``--against SRC`` adds ``mpi-launch`` with another ``mpi_runtime`` (the ``src`` directory of an
earlier checkout) first on ``PYTHONPATH``. Every ``mpi_runtime`` is byte-compiled first, as pip
does when it installs the package: without that, a machine that writes no bytecode
(``PYTHONDONTWRITEBYTECODE``) would compile the launcher's modules at every start.
"""

from __future__ import annotations

import argparse
import compileall
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


def time_once(argv: list[str], env: dict[str, str] | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, timeout=300, env=env)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--against", type=Path, default=None, metavar="SRC")
    args = parser.parse_args()
    import mpi_runtime

    for source in (Path(mpi_runtime.__file__).parent, args.against):
        if source is not None:
            compileall.compile_dir(str(source), quiet=1)
    with tempfile.TemporaryDirectory() as directory:
        script = Path(directory) / "hello.py"
        script.write_text(HELLO)
        runs = {name: (argv, None) for name, argv in commands(script).items()}
        if args.against is not None:
            earlier = {**os.environ, "PYTHONPATH": str(args.against.resolve())}
            runs["mpi-launch --np 4 (--against)"] = (runs["mpi-launch --np 4"][0], earlier)
        for argv, env in runs.values():  # warm the page cache once for each
            time_once(argv, env)
        times: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(args.repeats):
            for name, (argv, env) in runs.items():
                times[name].append(time_once(argv, env))
    baseline = statistics.median(times["mpirun -np 4 python -m mpi4py"])
    print(f"4-rank mpi4py hello, {args.repeats} runs each, {os.cpu_count()} CPUs")
    print(f"{'command':<34}{'median s':>10}{'best s':>10}{'ratio':>8}")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:<34}{median:>10.3f}{min(values):>10.3f}{median / baseline:>8.2f}")


if __name__ == "__main__":
    main()
