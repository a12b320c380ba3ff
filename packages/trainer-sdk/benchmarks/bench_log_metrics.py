"""Cost of ``log_metrics`` on the training thread, against writing each point synchronously.

    python packages/trainer-sdk/benchmarks/bench_log_metrics.py [--calls 200000] [--repeats 5]

Each row times ``--calls`` calls with two metrics (``loss``, ``lr``) in a loop, best of
``--repeats``, minus the same loop without the call; the background flush runs as it would in a
job (local backend: JSON lines appended to the job's ``metrics/rank-0.jsonl`` once a second), and
its time on the GIL is part of the measurement. Also printed: bytes per point on disk.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from trainer_sdk.training import metrics
from trainer_sdk.training.progress import STATUS_FILE_ENV


def _per_call_us(
    body: Callable[[int], None], calls: int, repeats: int, flush: Callable[[], None]
) -> tuple[float, float]:
    """Best-of-``repeats`` microseconds per call of ``body(i)``, less the empty loop's: wall
    time on the calling thread, and CPU time of the whole process (the flush thread included,
    ``flush`` run inside the timing); the second does not grow when other processes load the
    machine."""

    def empty(step: int) -> None:
        return None

    def timed(function: Callable[[int], None]) -> tuple[float, float]:
        best_wall = best_cpu = float("inf")
        for _ in range(repeats):
            wall, cpu = time.perf_counter(), time.process_time()
            for step in range(calls):
                function(step)
            best_wall = min(best_wall, time.perf_counter() - wall)
            flush()
            best_cpu = min(best_cpu, time.process_time() - cpu)
        return best_wall, best_cpu

    (body_wall, body_cpu), (empty_wall, empty_cpu) = timed(body), timed(empty)
    return (body_wall - empty_wall) / calls * 1e6, (body_cpu - empty_cpu) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        job = Path(directory)
        os.environ[STATUS_FILE_ENV] = str(job / "progress.json")
        os.environ["RANK"] = "0"
        logger = metrics.default_logger()

        def buffered(step: int) -> None:
            metrics.log_metrics({"loss": 0.31, "lr": 1e-3}, step=step)

        synchronous_path = job / "synchronous.jsonl"

        def synchronous(step: int) -> None:
            with open(synchronous_path, "a") as stream:
                stream.write(
                    json.dumps({"step": step, "time": time.time(), "values": {"loss": 0.31}}) + "\n"
                )

        cost = {
            "log_metrics (rank 0, flushed in the background)": _per_call_us(
                buffered, args.calls, args.repeats, logger.flush
            )
        }
        logger.close()
        logger.rank = 1
        cost["log_metrics (rank 1, not opted in)"] = _per_call_us(
            buffered, args.calls, args.repeats, logger.flush
        )
        cost["baseline: open, json.dumps, append per call"] = _per_call_us(
            synchronous, args.calls // 10, args.repeats, logger.flush
        )
        history = job / metrics.METRICS_DIR_NAME / "rank-0.jsonl"
        points = args.calls * args.repeats
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
        print(f"| {'what':50} | {'wall us/call':>12} | {'CPU us/call':>11} |")
        print(f"|{'-' * 52}|{'-' * 14}|{'-' * 13}|")
        for name, (wall, cpu) in cost.items():
            print(f"| {name:50} | {wall:12.2f} | {cpu:11.2f} |")
        print(f"\nhistory: {points} points, {history.stat().st_size / points:.1f} bytes per point")


if __name__ == "__main__":
    main()
