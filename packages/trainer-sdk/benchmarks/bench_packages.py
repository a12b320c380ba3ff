"""Job start with ``packages_to_install=["torch"]`` (satisfied by the environment) against none.

Alternates the two in one run and prints, per variant, the median over ``--repeats`` jobs of the
wall time from ``train()`` until the job is seen Complete (a one-node job that imports torch).
Before the fix the ``["torch"]`` variant downloaded a full torch build on its first job.

    python packages/trainer-sdk/benchmarks/bench_packages.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from trainer_sdk import CustomTrainer, LocalBackendConfig, TrainerClient


def imports_torch() -> None:
    """What a training function does first."""
    import torch

    print(torch.__version__)


def one_job(client: TrainerClient, requirements: list[str] | None) -> float:
    started = time.monotonic()
    name = client.train(trainer=CustomTrainer(imports_torch, packages_to_install=requirements))
    client.wait_for_job_status(name, timeout=600)
    elapsed = time.monotonic() - started
    client.delete_job(name)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    variants: dict[str, list[str] | None] = {"no packages_to_install": None, '["torch"]': ["torch"]}
    times: dict[str, list[float]] = {label: [] for label in variants}
    with tempfile.TemporaryDirectory() as root:
        client = TrainerClient(LocalBackendConfig(root=Path(root), stop_on_exit=True))
        for _ in range(args.repeats):
            for label, requirements in variants.items():
                times[label].append(one_job(client, requirements))
    baseline = statistics.median(times["no packages_to_install"])
    print(f"{'variant':<24} {'median s':>9} {'min s':>7} {'max s':>7} {'vs none':>8}")
    for label, values in times.items():
        median = statistics.median(values)
        print(
            f"{label:<24} {median:>9.2f} {min(values):>7.2f} {max(values):>7.2f} "
            f"{(median / baseline - 1) * 100:>+7.1f}%"
        )


if __name__ == "__main__":
    main()
