"""Where a read's time goes, batch by batch: the cache against raw Flight, same servers as
``bench_throughput.py``'s ratio part (each in a child process of its own).

Run from the repository root:

    python packages/data-cache/benchmarks/profile_read.py [--rows N] [--batch-rows B]
        [--repeat R] [--nodes 2]

Per side (medians over ``--repeat`` passes after a warm-up): the batch sizes each server sends
and the client yields, the time to the first batch (connecting, for the cache also asking the
head), the median time between batches, the longest one (for the cache: the switch to the next
partition), the time from the last batch to the end of the pass (closing the clients), and what
``to_tensors`` costs per received batch.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import pyarrow.flight as flight
from bench_throughput import (
    RAW,
    Batch,
    Child,
    cache_child,
    raw_batches,
    rows_of,
    write_parquet,
)
from trainer_data_cache import CacheDataset
from trainer_data_cache.client.tensors import to_tensors


def timeline(batches: Iterable[Batch]) -> tuple[list[float], float, list[int]]:
    """Seconds from the start to each batch, to the end, and each batch's rows."""
    start = time.perf_counter()
    stamps, sizes = [], []
    for batch in batches:
        stamps.append(time.perf_counter() - start)
        sizes.append(rows_of(batch))
    return stamps, time.perf_counter() - start, sizes


def report(name: str, runs: list[tuple[list[float], float, list[int]]]) -> None:
    def ms(values: Iterable[float]) -> str:
        return f"{statistics.median(values) * 1000:.2f}"

    gaps = [[b - a for a, b in itertools.pairwise(s)] for s, _, _ in runs]
    sizes = runs[0][2]
    print(
        f"{name:<28}{len(sizes):>8}{sorted(set(sizes))!s:>18}{ms(s[0] for s, _, _ in runs):>10}"
        f"{ms(statistics.median(g) for g in gaps):>10}{ms(max(g) for g in gaps):>10}"
        f"{ms(end - s[-1] for s, end, _ in runs):>10}{ms(end for _, end, _ in runs):>10}"
    )


def tensors_cost(endpoint: str, repeat: int) -> float:
    """Microseconds ``to_tensors`` takes for one received batch (best of ``repeat``)."""
    client = flight.FlightClient(endpoint)
    received = [chunk.data for chunk in client.do_get(flight.Ticket(b"all"))]
    client.close()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for batch in received:
            to_tensors(batch)
        best = min(best, (time.perf_counter() - start) / len(received))
    return best * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--batch-rows", type=int, default=65_536)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--nodes", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = write_parquet(Path(tmp) / "profile", args.rows, args.batch_rows)
        script = str(Path(__file__).with_name("bench_throughput.py"))
        raw = Child([script, "--serve-raw", str(path), "--batch-rows", str(args.batch_rows)])
        cache = cache_child(path, args.nodes)
        client = flight.FlightClient(raw.endpoint)  # kept across passes, as the dataset keeps its
        try:
            dataset = CacheDataset(cache.endpoint, "bench", batch_rows=args.batch_rows)
            cases: dict[str, Callable[[], Iterable[Batch]]] = {
                RAW: lambda: raw_batches(client),
                f"CacheDataset, {args.nodes} nodes": lambda: dataset,
            }
            runs: dict[str, list[tuple[list[float], float, list[int]]]] = {n: [] for n in cases}
            for batches in cases.values():
                timeline(batches())  # warm-up
            for round_ in range(args.repeat):
                names = list(cases) if round_ % 2 == 0 else list(cases)[::-1]
                for name in names:
                    runs[name].append(timeline(cases[name]()))
            cost = tensors_cost(raw.endpoint, args.repeat)
        finally:
            client.close()
            raw.stop()
            cache.stop()
    print(f"rows={args.rows} batch_rows={args.batch_rows} repeat={args.repeat} (medians, ms)")
    print(
        f"{'source':<28}{'batches':>8}{'batch rows':>18}{'first':>10}{'gap':>10}"
        f"{'max gap':>10}{'close':>10}{'pass':>10}"
    )
    for name, timelines in runs.items():
        report(name, timelines)
    print(f"to_tensors per received batch: {cost:.1f} us")


if __name__ == "__main__":
    main()
