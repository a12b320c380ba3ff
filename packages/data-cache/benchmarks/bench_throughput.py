"""Throughput into torch tensors on loopback: CacheDataset vs raw Flight do_get vs Parquet.

Run from the repository root:

    python packages/data-cache/benchmarks/bench_throughput.py [--rows N] [--batch-rows B]

One run starts a cache (``data-cache serve`` in a child process, two nodes), then times, on the
same data and batch size: ``CacheDataset`` through a DataLoader (no workers), raw
``pyarrow.flight`` ``do_get`` of the same endpoints turned into tensors the same way, and a
DataLoader over the Parquet file read with ``pyarrow.parquet``. After one warm-up pass each, the
cases run interleaved ``--repeat`` times; the table shows medians.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.flight as flight
import pyarrow.parquet as pq
import torch
from torch.utils.data import DataLoader, IterableDataset
from trainer_data_cache import CacheDataset, ConnectOptions
from trainer_data_cache.client.tensors import to_tensors
from trainer_data_cache.tickets import ReadRequest

VECTOR = 16


def make_table(rows: int) -> pa.Table:
    rng = np.random.default_rng(0)
    vectors = pa.FixedSizeListArray.from_arrays(
        pa.array(rng.random(rows * VECTOR, dtype=np.float32)), VECTOR
    )
    return pa.table(
        {"id": np.arange(rows), "label": rng.integers(0, 10, rows, dtype=np.int32), "x": vectors}
    )


def tensor_bytes(batch: dict[str, torch.Tensor]) -> int:
    return sum(t.numel() * t.element_size() for t in batch.values())


def measure(
    batches: Callable[[], Iterable[dict[str, torch.Tensor]]],
) -> tuple[float, float, int, int]:
    """Seconds to the first batch, total seconds, rows and bytes for one pass."""
    start = time.perf_counter()
    first = None
    rows = nbytes = 0
    for batch in batches():
        if first is None:
            first = time.perf_counter() - start
        rows += len(next(iter(batch.values())))
        nbytes += tensor_bytes(batch)
    return first or 0.0, time.perf_counter() - start, rows, nbytes


def raw_flight(endpoint: str, batch_rows: int) -> Iterator[dict[str, torch.Tensor]]:
    """The same endpoints read with plain FlightClient.do_get, each batch made into tensors."""
    connect = ConnectOptions()
    head = flight.FlightClient(endpoint)
    request = ReadRequest("bench", batch_rows=batch_rows).to_bytes()
    info = head.get_flight_info(flight.FlightDescriptor.for_command(request))
    for point in info.endpoints:
        client = flight.FlightClient(point.locations[0])
        reader = client.do_get(point.ticket, connect.call_options())
        for chunk in reader:
            yield to_tensors(chunk.data)


class ParquetBatches(IterableDataset):  # type: ignore[type-arg]
    """Batches read straight from the Parquet file."""

    def __init__(self, path: Path, batch_rows: int) -> None:
        self.path, self.batch_rows = path, batch_rows

    def __iter__(self) -> Iterator[dict[str, torch.Tensor]]:
        for batch in pq.ParquetFile(self.path).iter_batches(batch_size=self.batch_rows):
            yield to_tensors(batch)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--batch-rows", type=int, default=65_536)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.parquet"
        pq.write_table(make_table(args.rows), path)
        server = subprocess.Popen(
            [sys.executable, "-m", "trainer_data_cache", "serve", str(path), "--nodes", "2"],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            endpoint = server.stdout.readline().strip()  # type: ignore[union-attr]
            cases: dict[str, Callable[[], Iterable[dict[str, torch.Tensor]]]] = {
                "raw pyarrow.flight do_get": lambda: raw_flight(endpoint, args.batch_rows),
                "CacheDataset (DataLoader)": lambda: DataLoader(
                    CacheDataset(endpoint, "bench", batch_rows=args.batch_rows), batch_size=None
                ),
                "Parquet file (DataLoader)": lambda: DataLoader(
                    ParquetBatches(path, args.batch_rows), batch_size=None
                ),
            }
            for run in cases.values():
                measure(run)  # warm-up pass, not counted
            results: dict[str, list[tuple[float, float, int, int]]] = {name: [] for name in cases}
            for _ in range(args.repeat):  # interleaved, so load on the machine hits every case
                for name, run in cases.items():
                    results[name].append(measure(run))
        finally:
            server.terminate()
            server.wait(timeout=60)

    raw_rate = statistics.median(
        rows / total for _, total, rows, _ in results["raw pyarrow.flight do_get"]
    )
    print(f"rows={args.rows} batch_rows={args.batch_rows} repeat={args.repeat} (median of runs)")
    print(f"{'source':<28}{'rows/s':>14}{'GB/s':>9}{'first batch ms':>16}{'vs raw Flight':>15}")
    for name, runs in results.items():
        rate = statistics.median(rows / total for _, total, rows, _ in runs)
        gbps = statistics.median(nbytes / total / 1e9 for _, total, _, nbytes in runs)
        first = statistics.median(first for first, _, _, _ in runs) * 1000
        print(f"{name:<28}{rate:>14,.0f}{gbps:>9.2f}{first:>16.1f}{rate / raw_rate:>14.2f}x")


if __name__ == "__main__":
    main()
