"""Throughput into torch tensors on loopback: the cache against raw Flight and the alternatives.

Run from the repository root:

    python packages/data-cache/benchmarks/bench_throughput.py [--rows N] [--batch-rows B]
        [--repeat R] [--min-ratio 0.9] [--matrix-rows M] [--cell-timeout S]
        [--readers 1 2 4] [--workers 0 2] [--orders sequential shuffled]
        [--no-matrix | --no-ratio]

Part 1, the regression check: ``CacheDataset`` (``data-cache serve``, two nodes, in a child
process) against a bare ``pyarrow.flight`` ``do_get`` of the same table from a plain in-memory
Flight server (another child process), both turned into tensors by the same ``to_tensors``.
Both sides are measured the same way: a pass is one iteration, and both keep their connections
across passes (the ``CacheDataset`` is made once, as a training loop makes it once, and keeps
its clients; the raw side keeps one ``FlightClient``), so the cache's extra cost per pass is its
head round trip and its second node's stream; one warm-up pass each, then
``--repeat`` rounds in alternating order (A B, B A, ...) so that load drifting over the run
hits both. The ratio is taken of each side's best pass (load only ever adds time, so the
fastest pass is the most repeatable figure of what the code costs, as ``timeit`` reasons); the
ratio of the medians is printed beside it. It exits with status 1 when the best-pass ratio is
under ``--min-ratio``.

Part 2, the comparisons a user makes: readers (1, 2, 4 processes, each one rank) reading
their share of the rows, with and without two DataLoader workers, sequential and shuffled,
from the cache (1 and 2 nodes), from ``pyarrow.dataset`` scanning the same Parquet file (its
row groups dealt to the ranks), and from a map-style ``Dataset`` over NumPy arrays held in
memory (each reader loads the whole file first; batches by ``__getitems__``). Rows/s is all
readers' rows over the wall time from the first reader's first row to the last reader's last;
``start s`` is the slowest reader's time from starting to its first batch (connecting or
loading); ``peak MB`` is the largest reader's peak RSS plus its workers' (torch alone is a few
hundred MB of it). The matrix reads its own, smaller table (``--matrix-rows``, default
250,000): each cell starts 1 to 4 reader processes (and their workers), and on a shared 2-core
machine their start-up, not the rows, decides how long the 48 cells take; its batches are
``--matrix-batch-rows`` (default 8,192) rows, so that 4 readers with 2 workers each still
read several batches. A cell that runs
past ``--cell-timeout`` seconds is killed and printed as ``timeout``, so the matrix ends in a
bounded time.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.dataset as pds
import pyarrow.flight as flight
import pyarrow.parquet as pq
import torch
from torch.utils.data import (
    DataLoader,
    Dataset,
    DistributedSampler,
    IterableDataset,
    get_worker_info,
)
from trainer_data_cache import CacheDataset
from trainer_data_cache.client.tensors import to_tensors

VECTOR = 16
Batch = dict[str, torch.Tensor]


def make_table(rows: int) -> pa.Table:
    rng = np.random.default_rng(0)
    vectors = pa.FixedSizeListArray.from_arrays(
        pa.array(rng.random(rows * VECTOR, dtype=np.float32)), VECTOR
    )
    return pa.table(
        {"id": np.arange(rows), "label": rng.integers(0, 10, rows, dtype=np.int32), "x": vectors}
    )


def rows_of(batch: Batch) -> int:
    return len(next(iter(batch.values())))


# Servers in child processes ---------------------------------------------------------------


class RawServer(flight.FlightServerBase):  # type: ignore[misc]
    """A plain Flight server: any ticket streams the whole table in ``batch_rows`` batches."""

    def __init__(self, table: pa.Table, batch_rows: int) -> None:
        super().__init__("grpc://127.0.0.1:0")
        self.table, self.batch_rows = table.combine_chunks(), batch_rows

    def do_get(self, context: object, ticket: flight.Ticket) -> flight.RecordBatchStream:
        return flight.RecordBatchStream(self.table.to_reader(max_chunksize=self.batch_rows))


def serve_raw(path: str, batch_rows: int) -> None:
    server = RawServer(pq.read_table(path), batch_rows)
    print(f"grpc://127.0.0.1:{server.port}", flush=True)
    sys.stdin.read()  # until the parent closes our stdin
    server.shutdown()


class Child:
    """A child process whose first line of output is its endpoint."""

    def __init__(self, args: list[str]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        self.endpoint = self.process.stdout.readline().strip()  # type: ignore[union-attr]
        if not self.endpoint:
            raise RuntimeError(f"{args}: no endpoint")

    def stop(self) -> None:
        self.process.stdin.close()  # type: ignore[union-attr]
        self.process.terminate()
        self.process.wait(timeout=120)


def cache_child(path: Path, nodes: int) -> Child:
    return Child(["-m", "trainer_data_cache", "serve", str(path), "--nodes", str(nodes)])


# Readers ----------------------------------------------------------------------------------


def raw_batches(client: flight.FlightClient) -> Iterator[Batch]:
    for chunk in client.do_get(flight.Ticket(b"all")):
        yield to_tensors(chunk.data)


class ParquetShare(IterableDataset[Batch]):
    """A rank's row groups of the Parquet file, scanned with pyarrow.dataset (split again among
    DataLoader workers); ``shuffle`` permutes the row groups per epoch, like the cache's
    blocks."""

    def __init__(self, path: str, rank: int, world: int, shuffle: bool) -> None:
        self.path, self.rank, self.world, self.shuffle = path, rank, world, shuffle

    def __iter__(self) -> Iterator[Batch]:
        (fragment,) = pds.dataset(self.path, format="parquet").get_fragments()
        groups = list(fragment.split_by_row_group())
        order = np.random.default_rng(0).permutation(len(groups)) if self.shuffle else None
        if order is not None:
            groups = [groups[i] for i in order]
        mine = groups[self.rank :: self.world]
        info = get_worker_info()
        if info is not None:
            mine = mine[info.id :: info.num_workers]
        for group in mine:
            for batch in group.to_batches():
                yield to_tensors(batch)


class NumpyRows(Dataset[Batch]):
    """A map-style dataset over NumPy arrays in memory; ``__getitems__`` gathers a batch."""

    def __init__(self, path: str) -> None:
        table = pq.read_table(path)  # NumPy arrays of their own (writable), as a user's would be
        self.id = table.column("id").to_numpy().copy()
        self.label = table.column("label").to_numpy().copy()
        self.x = table.column("x").combine_chunks().flatten().to_numpy().reshape(-1, VECTOR).copy()

    def __len__(self) -> int:
        return len(self.id)

    def __getitem__(self, index: int) -> Batch:
        return self.__getitems__([index])

    def __getitems__(self, indices: list[int]) -> Batch:
        picked = np.asarray(indices)
        if len(picked) and picked[-1] - picked[0] == len(picked) - 1:  # a run: slice, no gather
            picked = slice(int(picked[0]), int(picked[-1]) + 1)  # type: ignore[assignment]
        return {
            "id": torch.from_numpy(self.id[picked]),
            "label": torch.from_numpy(self.label[picked]),
            "x": torch.from_numpy(self.x[picked]),
        }


def reader_batches(spec: dict[str, Any]) -> Iterable[Batch]:
    """The batches one reader (rank ``spec['rank']`` of ``spec['world']``) iterates."""
    rank, world, shuffle = spec["rank"], spec["world"], spec["shuffle"]
    workers, batch_rows = spec["workers"], spec["batch_rows"]
    extra: dict[str, Any] = {"num_workers": workers}  # workers forked (Linux's default)
    if spec["kind"] == "cache":
        dataset = CacheDataset(
            spec["endpoint"],
            "bench",
            batch_rows=batch_rows,
            shuffle=shuffle,
            rank=rank,
            world_size=world,
        )
        return DataLoader(dataset, batch_size=None, **extra)
    if spec["kind"] == "parquet":
        share = ParquetShare(spec["path"], rank, world, shuffle)
        return DataLoader(share, batch_size=None, **extra)
    rows = NumpyRows(spec["path"])
    sampler: DistributedSampler[int] = DistributedSampler(rows, world, rank, shuffle=shuffle)
    return DataLoader(rows, batch_size=batch_rows, sampler=sampler, collate_fn=_same, **extra)


def _same(batch: Any) -> Any:
    """The batch ``__getitems__`` gathered, as it is (no collation)."""
    return batch


def reader_main(spec: dict[str, Any]) -> None:
    """Read one share and print rows, clock times and peak memory as JSON."""
    began = time.time()
    rows, first = 0, None
    for batch in reader_batches(spec):
        if first is None:
            first = time.time()
        rows += rows_of(batch)
    end = time.time()
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    peak_kb = own + spec["workers"] * child
    report = {"rows": rows, "began": began, "first": first or end, "end": end, "kb": peak_kb}
    print(json.dumps(report), flush=True)


def run_readers(
    spec: dict[str, Any], readers: int, timeout: float
) -> tuple[float, float, float, int] | None:
    """``readers`` reader processes at once: total rows/s, slowest start s, peak MB, rows; None
    when they are not done within ``timeout`` seconds (then they are killed)."""
    processes = [
        subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--reader",
                json.dumps({**spec, "rank": r, "world": readers}),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        for r in range(readers)
    ]
    deadline = time.monotonic() + timeout
    reports = []
    for process in processes:
        try:
            out, _ = process.communicate(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for each in processes:
                each.kill()
                each.wait()
            return None
        if process.returncode:
            raise RuntimeError(f"reader {spec} exited {process.returncode}")
        reports.append(json.loads(out.strip().splitlines()[-1]))
    rows = sum(r["rows"] for r in reports)
    window = max(r["end"] for r in reports) - min(r["first"] for r in reports)
    start = max(r["first"] - r["began"] for r in reports)
    return rows / window, start, max(r["kb"] for r in reports) / 1024, rows


# The two parts ----------------------------------------------------------------------------


def measure(batches: Callable[[], Iterable[Batch]]) -> tuple[float, float]:
    """Rows/s and seconds to the first batch of one pass."""
    start = time.perf_counter()
    first = None
    rows = 0
    for batch in batches():
        if first is None:
            first = time.perf_counter() - start
        rows += rows_of(batch)
    return rows / (time.perf_counter() - start), first or 0.0


RAW = "raw pyarrow.flight do_get"
CACHE = "CacheDataset"


def ratio_part(path: Path, args: argparse.Namespace) -> float:
    raw = Child([__file__, "--serve-raw", str(path), "--batch-rows", str(args.batch_rows)])
    cache = cache_child(path, 2)
    client = flight.FlightClient(raw.endpoint)  # kept across passes, as the dataset keeps its
    try:
        dataset = CacheDataset(cache.endpoint, "bench", batch_rows=args.batch_rows)
        cases: dict[str, Callable[[], Iterable[Batch]]] = {
            RAW: lambda: raw_batches(client),
            CACHE: lambda: dataset,
        }
        for run in cases.values():
            measure(run)  # warm-up pass, not counted
        results: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
        for round_ in range(args.repeat):  # alternating order: drifting load hits both
            names = list(cases) if round_ % 2 == 0 else list(cases)[::-1]
            for name in names:
                results[name].append(measure(cases[name]))
    finally:
        client.close()
        raw.stop()
        cache.stop()
    best = {name: max(rate for rate, _ in runs) for name, runs in results.items()}
    median = {name: statistics.median(rate for rate, _ in runs) for name, runs in results.items()}
    print(f"rows={args.rows} batch_rows={args.batch_rows} repeat={args.repeat}")
    print(
        f"{'source':<28}{'best rows/s':>14}{'GB/s':>7}{'median rows/s':>15}"
        f"{'first batch ms':>16}{'best vs raw':>13}{'median vs raw':>15}"
    )
    for name, runs in results.items():
        first = statistics.median(first for _, first in runs) * 1000
        print(
            f"{name:<28}{best[name]:>14,.0f}{best[name] * ROW_BYTES / 1e9:>7.2f}"
            f"{median[name]:>15,.0f}{first:>16.1f}{best[name] / best[RAW]:>12.2f}x"
            f"{median[name] / median[RAW]:>14.2f}x"
        )
    ratio = best[CACHE] / best[RAW]
    per_round = " ".join(
        f"{c / r:.2f}" for (c, _), (r, _) in zip(results[CACHE], results[RAW], strict=True)
    )
    print(
        f"ratio CacheDataset / raw Flight: best {ratio:.3f}, median "
        f"{median[CACHE] / median[RAW]:.3f} (per round: {per_round})"
    )
    return ratio


ROW_BYTES = 8 + 4 + 4 * VECTOR
"""Bytes of one row in tensors."""


def matrix_part(path: Path, args: argparse.Namespace) -> None:
    header = f"{'source':<22}{'readers':>8}{'workers':>8}{'order':>11}{'rows/s':>13}"
    print()
    print(header + f"{'start s':>9}{'peak MB':>9}")
    base = {"path": str(path), "batch_rows": args.matrix_batch_rows}
    for nodes in (1, 2):
        cache = cache_child(path, nodes)
        try:
            rows_for(
                f"cache, {nodes} node{'s' if nodes > 1 else ''}",
                {**base, "kind": "cache", "endpoint": cache.endpoint},
                args,
            )
        finally:
            cache.stop()
    rows_for("pyarrow.dataset", {**base, "kind": "parquet"}, args)
    rows_for("NumPy map-style", {**base, "kind": "numpy"}, args)


def rows_for(name: str, spec: dict[str, Any], args: argparse.Namespace) -> None:
    for readers in args.readers:
        for workers in args.workers:
            for shuffle in [order == "shuffled" for order in args.orders]:
                result = run_readers(
                    {**spec, "workers": workers, "shuffle": shuffle}, readers, args.cell_timeout
                )
                order = "shuffled" if shuffle else "sequential"
                cell = f"{name:<22}{readers:>8}{workers:>8}{order:>11}"
                if result is None:
                    print(f"{cell}{'timeout':>13}", flush=True)
                    continue
                rate, start, peak, rows = result
                if rows != args.matrix_rows:
                    raise RuntimeError(f"{name}: read {rows} of {args.matrix_rows} rows")
                print(f"{cell}{rate:>13,.0f}{start:>9.2f}{peak:>9.0f}", flush=True)


def write_parquet(folder: Path, rows: int, batch_rows: int) -> Path:
    """The benchmark table of ``rows`` rows, one row group per batch, as ``bench.parquet``
    (the cache names the dataset after the file)."""
    folder.mkdir()
    path = folder / "bench.parquet"
    pq.write_table(make_table(rows), path, row_group_size=batch_rows)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=4_000_000)  # the case
    parser.add_argument("--batch-rows", type=int, default=65_536)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--min-ratio", type=float, default=0.9)
    parser.add_argument("--matrix-rows", type=int, default=250_000)
    parser.add_argument("--matrix-batch-rows", type=int, default=8192)
    parser.add_argument("--cell-timeout", type=float, default=300.0)
    parser.add_argument("--readers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--workers", type=int, nargs="+", default=[0, 2])
    parser.add_argument(
        "--orders",
        nargs="+",
        choices=["sequential", "shuffled"],
        default=["sequential", "shuffled"],
    )
    parser.add_argument("--no-matrix", action="store_true", help="Only the ratio to raw Flight.")
    parser.add_argument("--no-ratio", action="store_true", help="Only the comparisons.")
    parser.add_argument("--reader", help=argparse.SUPPRESS)
    parser.add_argument("--serve-raw", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.reader:
        return reader_main(json.loads(args.reader))
    if args.serve_raw:
        return serve_raw(args.serve_raw, args.batch_rows)

    with tempfile.TemporaryDirectory() as tmp:
        ratio = None
        if not args.no_ratio:
            ratio = ratio_part(write_parquet(Path(tmp) / "ratio", args.rows, args.batch_rows), args)
        if not args.no_matrix:
            matrix_part(
                write_parquet(Path(tmp) / "matrix", args.matrix_rows, args.matrix_batch_rows), args
            )
    if ratio is not None and ratio < args.min_ratio:
        print(f"FAIL: CacheDataset reads at {ratio:.3f}x raw Flight, under {args.min_ratio}x")
        sys.exit(1)


if __name__ == "__main__":
    main()
