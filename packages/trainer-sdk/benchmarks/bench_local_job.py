"""Two-node jobs through TrainerClient (local backend) against torchrun, alternated in one run.

Two jobs: ``trivial`` (init_process_group, one all_reduce, destroy_process_group), where the fixed
cost of a launch shows, and ``ddp`` (a few seconds of DDP training), where it hides. Measures, per
job and launcher, the median over ``--repeats`` runs of
  - wall time: from the call that starts the job until its completion is seen;
  - user code start: until the training function has started on every rank.
Baseline: ``torchrun --nnodes 1 --nproc-per-node 2`` running the same function directly. The
local backend runs twice: with each pod in its private mount namespace (the default on Linux), and
without (``TRAINER_SDK_LOCAL_NAMESPACES=0``, the rewriting fallback), so that the namespaces'
added cost per job shows beside it (each job has two pods).

    python packages/trainer-sdk/benchmarks/bench_local_job.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import inspect
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from trainer_sdk import CustomTrainer, LocalBackendConfig, TrainerClient
from trainer_sdk.backends.local.supervisor import isolation
from trainer_sdk.backends.local.volumes import Mount


def trivial(marker_dir: str) -> None:
    """Record when user code starts on this rank, then one gloo all_reduce."""
    import time

    started = time.time()
    import os

    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo")
    with open(os.path.join(marker_dir, f"rank-{dist.get_rank()}"), "w") as marker:
        marker.write(repr(started))
    dist.all_reduce(torch.ones(1))
    dist.destroy_process_group()


def ddp(marker_dir: str) -> None:
    """Record when user code starts on this rank, then DDP steps of an MLP (a few seconds)."""
    import time

    started = time.time()
    import os

    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo")
    with open(os.path.join(marker_dir, f"rank-{dist.get_rank()}"), "w") as marker:
        marker.write(repr(started))
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.parallel.DistributedDataParallel(
        torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(300):
        optimizer.zero_grad()
        model(torch.randn(64, 256)).sum().backward()
        optimizer.step()
    dist.destroy_process_group()


JOBS = {"trivial": trivial, "ddp": ddp}
LAUNCHERS = ("torchrun", "fallback", "namespaces")


def free_port() -> int:
    """A port nobody listens on: torchrun's default 29500 is shared by every run on the machine."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def user_code_start(marker_dir: Path, ranks: int, t0: float) -> float:
    """Seconds from ``t0`` until the last rank started the function."""
    markers = sorted(marker_dir.glob("rank-*"))
    if len(markers) != ranks:
        raise RuntimeError(f"expected {ranks} rank markers in {marker_dir}, found {len(markers)}")
    return max(float(path.read_text()) for path in markers) - t0


TORCHRUN_FAILURES: list[int] = []
"""Exit codes of torchrun runs that failed and were run again (its ranks sometimes abort at
interpreter exit: ``terminate called without an active exception``)."""


def run_torchrun(job: str, work: Path) -> tuple[float, float]:
    while True:
        try:
            return _run_torchrun_once(job, work)
        except subprocess.CalledProcessError as error:
            TORCHRUN_FAILURES.append(error.returncode)
            shutil.rmtree(work / "markers")


def _run_torchrun_once(job: str, work: Path) -> tuple[float, float]:
    markers = work / "markers"
    markers.mkdir()
    script = work / f"{job}.py"
    script.write_text(f"{inspect.getsource(JOBS[job])}\n{job}(marker_dir={str(markers)!r})\n")
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
            "--master-port",
            str(free_port()),
            str(script),
        ],
        check=True,
        cwd=work,
        stdout=subprocess.DEVNULL,
    )
    wall = time.time() - t0
    return wall, user_code_start(markers, 2, t0)


def run_local(job: str, client: TrainerClient, work: Path, namespaces: bool) -> tuple[float, float]:
    markers = work / "markers"
    markers.mkdir()
    # Read at submit (``isolation.available``), which keeps the decision in the job's plan.
    os.environ[isolation.DISABLE_ENV] = "1" if namespaces else "0"
    t0 = time.time()
    name = client.train(
        trainer=CustomTrainer(
            func=JOBS[job],
            func_args={"marker_dir": str(markers)},
            num_nodes=2,
            resources_per_node={"cpu": 1},
        )
    )
    client.wait_for_job_status(name, timeout=300, polling_interval=1)
    wall = time.time() - t0
    return wall, user_code_start(markers, 2, t0)


def pod_start(scratch: Path, repeats: int) -> tuple[float, float]:
    """Median seconds to start and end ``true``: directly, and inside a pod's namespaces with
    three volumes (one under a missing top-level directory, as ``/ckpt``) and the hosts file."""
    volume, pod = scratch / "volume", scratch / "pod"
    volume.mkdir()
    pod.mkdir()
    hosts = scratch / "hosts"
    hosts.write_text(isolation.hosts_file({"j-node-0-0": "127.0.0.1"}, "j", "default"))
    sandbox = isolation.PodSandbox(
        mounts=tuple(
            Mount(path, str(volume), False)
            for path in (f"/bench-{os.getpid()}/ckpt", "/mnt/bench-data", str(pod / "work"))
        ),
        scratch=pod,
        cwd=pod,
        hostname="j-node-0-0",
        hosts=hosts,
    )
    timings: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(repeats):
        for isolated in (False, True):
            command = isolation.wrap(["true"], sandbox) if isolated else ["true"]
            started = time.perf_counter()
            subprocess.run(command, check=True)
            timings[isolated].append(time.perf_counter() - started)
    return statistics.median(timings[False]), statistics.median(timings[True])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    results: dict[tuple[str, str], list[tuple[float, float]]] = {
        (job, launcher): [] for job in JOBS for launcher in LAUNCHERS
    }
    # A supervisor may still be writing into its job directory when the last job is seen
    # complete: cleaning up the scratch directory must not lose the table.
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as scratch:
        client = TrainerClient(LocalBackendConfig(root=Path(scratch) / "jobs"))
        for repeat in range(args.repeats):
            for job in JOBS:
                work = Path(scratch) / f"{job}-{repeat}"
                for launcher in LAUNCHERS:
                    (work / launcher).mkdir(parents=True)
                results[job, "torchrun"].append(run_torchrun(job, work / "torchrun"))
                for launcher in LAUNCHERS[1:]:
                    namespaces = launcher == "namespaces"
                    results[job, launcher].append(
                        run_local(job, client, work / launcher, namespaces)
                    )
        client.backend.close()  # type: ignore[attr-defined]  # supervisors end before cleanup
        start_direct, start_isolated = (
            pod_start(Path(scratch), 20 * args.repeats) if isolation.available() else (0.0, 0.0)
        )
    print(f"2-node jobs, median of {args.repeats} runs (seconds), load average {_load()}")
    if TORCHRUN_FAILURES:
        print(
            f"torchrun failed and was run again {len(TORCHRUN_FAILURES)} time(s): exit codes "
            f"{TORCHRUN_FAILURES}"
        )
    print(
        f"| {'job':<7} | {'metric':<26} | {'torchrun 1x2':>12} | {'local, no namespaces':>20} "
        f"| {'local, namespaces':>17} | {'ratio':>5} | {'added per pod':>13} |"
    )
    print(f"|{'-' * 9}|{'-' * 28}|{'-' * 14}|{'-' * 22}|{'-' * 19}|{'-' * 7}|{'-' * 15}|")
    for job in JOBS:
        for index, metric in enumerate(("wall time", "user code start, all ranks")):
            base, plain, isolated = (
                statistics.median(run[index] for run in results[job, launcher])
                for launcher in LAUNCHERS
            )
            print(
                f"| {job:<7} | {metric:<26} | {base:>12.2f} | {plain:>20.2f} "
                f"| {isolated:>17.2f} | {isolated / base:>5.2f} | {(isolated - plain) / 2:>13.3f} |"
            )

    if start_isolated:
        print(
            f"\none pod's start (start and end `true`, median of {20 * args.repeats}): directly "
            f"{start_direct * 1000:.1f} ms, in its namespaces {start_isolated * 1000:.1f} ms, "
            f"added {(start_isolated - start_direct) * 1000:.1f} ms"
        )


def _load() -> str:
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


if __name__ == "__main__":
    main()
