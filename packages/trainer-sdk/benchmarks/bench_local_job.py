"""A trivial two-node job through TrainerClient (local backend) against torchrun, in one run.

Measures, per launcher, the median over ``--repeats`` runs of
  - wall time: from the call that starts the job until its completion is seen;
  - user code start: until the training function has started on every rank.
Baseline: ``torchrun --nnodes 1 --nproc-per-node 2`` running the same function directly.

    python packages/trainer-sdk/benchmarks/bench_local_job.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import inspect
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from trainer_sdk import CustomTrainer, LocalBackendConfig, TrainerClient


def trivial(marker_dir: str) -> None:
    """Record when user code starts on this rank, then one gloo barrier."""
    import time

    started = time.time()
    import os

    import torch.distributed as dist

    dist.init_process_group("gloo")
    with open(os.path.join(marker_dir, f"rank-{dist.get_rank()}"), "w") as marker:
        marker.write(repr(started))
    dist.barrier()
    dist.destroy_process_group()


def user_code_start(marker_dir: Path, ranks: int, t0: float) -> float:
    """Seconds from ``t0`` until the last rank started the function."""
    markers = sorted(marker_dir.glob("rank-*"))
    if len(markers) != ranks:
        raise RuntimeError(f"expected {ranks} rank markers in {marker_dir}, found {len(markers)}")
    return max(float(path.read_text()) for path in markers) - t0


def run_torchrun(work: Path) -> tuple[float, float]:
    markers = work / "markers"
    markers.mkdir()
    script = work / "trivial.py"
    script.write_text(f"{inspect.getsource(trivial)}\ntrivial(marker_dir={str(markers)!r})\n")
    t0 = time.time()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nnodes",
            "1",
            "--nproc-per-node",
            "2",
            str(script),
        ],
        check=True,
        cwd=work,
        stdout=subprocess.DEVNULL,
    )
    wall = time.time() - t0
    return wall, user_code_start(markers, 2, t0)


def run_local(client: TrainerClient, work: Path) -> tuple[float, float]:
    markers = work / "markers"
    markers.mkdir()
    t0 = time.time()
    name = client.train(
        trainer=CustomTrainer(
            func=trivial,
            func_args={"marker_dir": str(markers)},
            num_nodes=2,
            resources_per_node={"cpu": 1},
        )
    )
    client.wait_for_job_status(name, timeout=300, polling_interval=1)
    wall = time.time() - t0
    return wall, user_code_start(markers, 2, t0)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    results: dict[str, list[tuple[float, float]]] = {"torchrun": [], "local": []}
    with tempfile.TemporaryDirectory() as scratch:
        client = TrainerClient(LocalBackendConfig(root=Path(scratch) / "jobs"))
        for repeat in range(args.repeats):
            work = Path(scratch) / f"run-{repeat}"
            (work / "torchrun").mkdir(parents=True)
            (work / "local").mkdir()
            results["torchrun"].append(run_torchrun(work / "torchrun"))
            results["local"].append(run_local(client, work / "local"))
        client.backend.close()  # type: ignore[attr-defined]  # supervisors end before cleanup
    print(f"trivial 2-node job, median of {args.repeats} runs (seconds)")
    print(
        f"| {'metric':<28} | {'torchrun 1x2':>12} "
        f"| {'TrainerClient local 2x1':>23} | {'ratio':>5} |"
    )
    print(f"|{'-' * 30}|{'-' * 14}|{'-' * 25}|{'-' * 7}|")
    for index, metric in enumerate(("wall time", "user code start, all ranks")):
        base = statistics.median(run[index] for run in results["torchrun"])
        local = statistics.median(run[index] for run in results["local"])
        print(f"| {metric:<28} | {base:>12.2f} | {local:>23.2f} | {local / base:>5.2f} |")


if __name__ == "__main__":
    main()
