"""How long admitting and building a job takes as it grows from 1 to 10,000 nodes.

Two runtimes: torch-distributed (the JobSet does not grow with the node count) and
deepspeed-distributed with a Coscheduling PodGroup (the MPI hostfile has one line per node).
Each figure is the best of repeated calls (at least 5, at least 0.2 s), which is the least
disturbed by other processes on a shared machine. Baseline, in the same run: ``json.dumps``
of the objects built, the least a driver does with a Plan before sending it. Prints a Markdown
table; exits non-zero if 1,000 MPI nodes take 50 ms or more, or if the time per node at 10,000
nodes is over twice that at 1,000 (not linear).

    python packages/trainer-runtime/benchmarks/bench_build.py

``--against TREE`` compares this tree's runtime with another checkout's (e.g. a git worktree of
the commit before the typed core) in one run: each round runs this script in a child process
per tree, alternating (``PYTHONPATH`` puts that tree's ``packages/*/src`` first), and keeps the
best figure per cell. Prints both side by side with their ratio; exits non-zero if this tree
takes more than 1.5 times the other's anywhere, or if 1,000 MPI nodes take 50 ms or more.

    git worktree add --detach /tmp/dict-core <commit>
    python packages/trainer-runtime/benchmarks/bench_build.py --against /tmp/dict-core
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from mpi_runtime import SSHKeyPair
from trainer_api import TrainJob
from trainer_runtime import (
    Observed,
    Plan,
    Settings,
    admit,
    build,
    builtin_runtimes,
    parse_runtime,
    parse_trainjob,
)
from trainer_runtime.inputs import Runtime

NODES = (1, 100, 1_000, 10_000)
NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)
SETTINGS = Settings(ssh_keypair=lambda: SSHKeyPair(private_key="k\n", public_key="p\n"))
BUDGET_MS_AT_1000 = 50.0
MAX_RATIO = 1.5
ROUNDS = 3


def _admit_and_build(job: TrainJob, runtime: Runtime) -> Plan:
    """What a driver does with a job it has parsed: admit it once, then build."""
    return build(admit(job, runtime), Observed(), NOW, settings=SETTINGS)


def _job(runtime: str, nodes: int) -> TrainJob:
    return parse_trainjob(
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": "bench", "namespace": "default", "uid": "u"},
            "spec": {
                "runtimeRef": {"name": runtime},
                "trainer": {
                    "numNodes": nodes,
                    "command": ["python3", "train.py"],
                    "env": [{"name": "EPOCHS", "value": "3"}],
                    "resourcesPerNode": {"requests": {"cpu": "4", "memory": "16Gi"}},
                },
            },
        }
    )


def _runtime(name: str, gang: bool) -> Runtime:
    runtime = builtin_runtimes()[name].to_dict()
    if gang:
        runtime["spec"]["podGroupPolicy"] = {"coscheduling": {"scheduleTimeoutSeconds": 60}}
    return parse_runtime(runtime)


def _best_ms(call: Callable[[], Any], min_seconds: float = 0.2, min_runs: int = 5) -> float:
    call()  # warm-up: caches, first-call imports
    times: list[float] = []
    started = time.perf_counter()
    while len(times) < min_runs or time.perf_counter() - started < min_seconds:
        begin = time.perf_counter()
        call()
        times.append(time.perf_counter() - begin)
    return min(times) * 1000


def measure() -> list[tuple[int, float, float, float, float]]:
    """(nodes, torch ms, MPI ms, json.dumps ms, MPI µs per node) for each node count."""
    torch = _runtime("torch-distributed", gang=False)
    mpi = _runtime("deepspeed-distributed", gang=True)
    rows = []
    for nodes in NODES:
        torch_job, mpi_job = _job("torch-distributed", nodes), _job("deepspeed-distributed", nodes)
        objects = _admit_and_build(mpi_job, mpi).apply
        torch_ms = _best_ms(functools.partial(_admit_and_build, torch_job, torch))
        mpi_ms = _best_ms(functools.partial(_admit_and_build, mpi_job, mpi))
        dump_ms = _best_ms(functools.partial(json.dumps, objects))
        rows.append((nodes, torch_ms, mpi_ms, dump_ms, mpi_ms * 1000 / nodes))
    return rows


def report(rows: list[tuple[int, float, float, float, float]]) -> int:
    """Print the table for one tree; non-zero when over budget or not linear."""
    print(
        "| nodes | torch build (ms) | MPI + PodGroup build (ms) "
        "| baseline: json.dumps of MPI objects (ms) | MPI µs per node |"
    )
    print("|---:|---:|---:|---:|---:|")
    for nodes, torch_ms, mpi_ms, dump_ms, per_node in rows:
        print(f"| {nodes:,} | {torch_ms:.2f} | {mpi_ms:.2f} | {dump_ms:.2f} | {per_node:.1f} |")
    at = {nodes: mpi_ms for nodes, _, mpi_ms, _, _ in rows}
    failures = []
    if at[1_000] >= BUDGET_MS_AT_1000:
        failures.append(f"1,000 nodes took {at[1_000]:.1f} ms (budget {BUDGET_MS_AT_1000:.0f} ms)")
    if at[10_000] / 10_000 > 2 * at[1_000] / 1_000:
        failures.append("time per node at 10,000 nodes is over twice that at 1,000: not linear")
    for failure in failures:
        print(f"FAIL: {failure}", file=sys.stderr)
    return 1 if failures else 0


def _child(tree: Path | None) -> dict[int, tuple[float, float]]:
    """{nodes: (torch ms, MPI ms)} measured by a child process on ``tree`` (None: this one)."""
    env = dict(os.environ)
    if tree is not None:
        sources = sorted(str(src) for src in (tree / "packages").glob("*/src"))
        env["PYTHONPATH"] = os.pathsep.join([*sources, env.get("PYTHONPATH", "")])
    out = subprocess.run(
        [sys.executable, __file__, "--json"], env=env, check=True, capture_output=True, text=True
    ).stdout
    return {int(nodes): (torch, mpi) for nodes, torch, mpi in json.loads(out)}


def compare(tree: Path) -> int:
    """Side by side: ``tree`` (before) and this tree (after), best of ``ROUNDS`` alternations."""
    before: dict[int, tuple[float, float]] = {}
    after: dict[int, tuple[float, float]] = {}
    for _ in range(ROUNDS):
        for best, which in ((before, tree), (after, None)):
            for nodes, figures in _child(which).items():
                old = best.get(nodes, (float("inf"), float("inf")))
                best[nodes] = (min(old[0], figures[0]), min(old[1], figures[1]))
    print(f"before: {tree}; after: {Path(__file__).resolve().parents[3]}")
    print(
        "| nodes | torch before (ms) | torch after (ms) | ratio "
        "| MPI + PodGroup before (ms) | MPI + PodGroup after (ms) | ratio |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|")
    failures = []
    for nodes in NODES:
        (torch_before, mpi_before), (torch_after, mpi_after) = before[nodes], after[nodes]
        ratios = (torch_after / torch_before, mpi_after / mpi_before)
        print(
            f"| {nodes:,} | {torch_before:.2f} | {torch_after:.2f} | {ratios[0]:.2f}x "
            f"| {mpi_before:.2f} | {mpi_after:.2f} | {ratios[1]:.2f}x |"
        )
        if max(ratios) > MAX_RATIO:
            failures.append(
                f"{nodes:,} nodes: {max(ratios):.2f}x the time before (max {MAX_RATIO}x)"
            )
    if after[1_000][1] >= BUDGET_MS_AT_1000:
        failures.append(
            f"1,000 nodes took {after[1_000][1]:.1f} ms (budget {BUDGET_MS_AT_1000:.0f} ms)"
        )
    for failure in failures:
        print(f"FAIL: {failure}", file=sys.stderr)
    return 1 if failures else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", type=Path, help="another checkout to compare with")
    parser.add_argument("--json", action="store_true", help="print [nodes, torch, MPI] rows")
    args = parser.parse_args()
    if args.against is not None:
        return compare(args.against)
    rows = measure()
    if args.json:
        print(json.dumps([[nodes, torch, mpi] for nodes, torch, mpi, _, _ in rows]))
        return 0
    return report(rows)


if __name__ == "__main__":
    sys.exit(main())
