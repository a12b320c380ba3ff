"""Do DDP ranks that finished training also exit cleanly? N jobs each way, under CPU load.

Runs ``--runs`` consecutive 2-node DDP jobs (gloo, DDP on a Linear, two steps,
``destroy_process_group``) through ``TrainerClient`` on the local backend, alternating with the
same code under plain ``torchrun --nnodes 1 --nproc-per-node 2``, while ``--load`` busy processes
keep the cores busy; prints failures/N for each, and the exit codes of the failed runs. On torch
2.13 plain torchrun ranks abort now and then at interpreter exit (``terminate called without an
active exception``, exit -6); the platform's rank entrypoint ends ranks without that window.

    python packages/trainer-sdk/benchmarks/bench_ddp_exits.py [--runs 30] [--load 2]
"""

from __future__ import annotations

import argparse
import inspect
import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

from trainer_sdk import CustomTrainer, LocalBackendConfig, TrainerClient

# The repository's tools/: the same CPU load the flake hunter puts on the machine.
sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tools"))
from flake_hunt import cpu_load


def ddp_two_steps() -> None:
    """Two DDP steps of a Linear over gloo, then destroy the process group."""
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    dist.init_process_group("gloo")
    model = DistributedDataParallel(torch.nn.Linear(4, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(2):
        optimizer.zero_grad()
        model(torch.randn(8, 4)).sum().backward()
        optimizer.step()
    dist.destroy_process_group()


TORCHRUN = (sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc-per-node", "2")


def free_port() -> int:
    """A port nobody listens on: torchrun's default 29500 is shared by every run on the machine."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def run_torchrun(script: Path) -> str | None:
    """None when the run succeeded, else what failed."""
    result = subprocess.run(
        [*TORCHRUN, "--master-port", str(free_port()), str(script)],
        cwd=script.parent,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if result.returncode == 0:
        return None
    aborted = "terminate called without an active exception" in result.stderr
    return f"exit {result.returncode}" + (" (terminate called at exit)" if aborted else "")


def run_local(client: TrainerClient) -> str | None:
    """None when the job completed, else its status and message."""
    name = client.train(trainer=CustomTrainer(func=ddp_two_steps, num_nodes=2))
    job = client.wait_for_job_status(name, {"Complete", "Failed"}, timeout=600)
    if job.status == "Complete":
        return None
    logs = "\n".join(client.get_job_logs(name, step="node-0"))
    logs += "\n".join(client.get_job_logs(name, step="node-1"))
    aborted = "terminate called without an active exception" in logs
    return f"{job.status}" + (" (terminate called at exit)" if aborted else "")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--load", type=int, default=os.cpu_count() or 2, help="busy processes")
    args = parser.parse_args()
    failures: dict[str, list[str]] = {"torchrun 1x2": [], "TrainerClient local 2x1": []}
    with tempfile.TemporaryDirectory() as scratch, cpu_load(args.load):
        script = Path(scratch) / "ddp_two_steps.py"
        script.write_text(f"{inspect.getsource(ddp_two_steps)}\nddp_two_steps()\n")
        client = TrainerClient(LocalBackendConfig(root=Path(scratch) / "jobs"))
        for run in range(args.runs):
            for launcher, outcome in (
                ("torchrun 1x2", run_torchrun(script)),
                ("TrainerClient local 2x1", run_local(client)),
            ):
                if outcome is not None:
                    failures[launcher].append(f"run {run + 1}: {outcome}")
            print(
                f"run {run + 1}/{args.runs}: "
                + ", ".join(f"{name} {len(failed)} failed" for name, failed in failures.items()),
                flush=True,
            )
        client.backend.close()  # type: ignore[attr-defined]  # supervisors end before cleanup
    cores = os.cpu_count()
    print(f"\n2-rank DDP jobs, {args.runs} each, {args.load} busy processes on {cores} cores")
    print(f"| {'launcher':<24} | {'failures/N':>10} |")
    print(f"|{'-' * 26}|{'-' * 12}|")
    for launcher, failed in failures.items():
        print(f"| {launcher:<24} | {f'{len(failed)}/{args.runs}':>10} |")
    for launcher, failed in failures.items():
        for line in failed:
            print(f"{launcher}: {line}")


if __name__ == "__main__":
    main()
