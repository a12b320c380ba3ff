"""Run by ``test_forks.py`` in a fresh process: read from a cache in this process, then read it
through DataLoaders whose workers are forked from this process, in three scenarios.

``python forked_loader.py ENDPOINT DATASET`` prints one JSON line mapping each scenario to
``{"held": [...], "error": ..., "message": ..., "ids": [...]}``: what this process held open when
the workers were forked, what the forking loader raised (null if nothing), and every id the
workers yielded once they could read; plus ``threads_at_start``, the gRPC threads seen before
the first connection.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.flight as flight
import torch
from torch.utils.data import DataLoader
from trainer_data_cache import CacheDataset, LocalCache, forks

BATCH = 16
WORKER_TIMEOUT = 30.0
"""Seconds a worker may take per batch: a hang becomes an error instead of a stuck test."""


def forked_ids(dataset: CacheDataset) -> list[int]:
    """Every id a two-worker DataLoader with forked workers yields."""
    loader = DataLoader(
        dataset,
        batch_size=None,
        num_workers=2,
        multiprocessing_context="fork",
        timeout=WORKER_TIMEOUT,
    )
    iterator = iter(loader)
    try:
        return [row for batch in iterator for row in batch["id"].tolist()]
    finally:
        # After a worker's error the iterator sits in a reference cycle, and when the garbage
        # collector ends its workers it waits 5 s for each: end them now.
        iterator._shutdown_workers()  # type: ignore[attr-defined]


def attempt(dataset: CacheDataset) -> dict[str, object]:
    try:
        return {"error": None, "message": None, "ids": forked_ids(dataset)}
    except Exception as error:  # reported to the test, which asserts on it
        return {"error": type(error).__name__, "message": str(error), "ids": []}


def after_reads(endpoint: str, name: str) -> dict[str, object]:
    """The parent reads everything, then peeks at one batch, then forks the workers at once
    (gRPC is still shutting down: closing a client returns before its threads end)."""
    dataset = CacheDataset(endpoint, name, batch_rows=BATCH)
    threads_while_reading = None
    for batch in dataset:
        threads_while_reading = threads_while_reading or forks.grpc_threads()
        assert len(batch["id"]) > 0
    next(iter(dataset))
    held = forks.held()
    return {"held": held, "threads_while_reading": threads_while_reading, **attempt(dataset)}


def open_read(endpoint: str, name: str) -> dict[str, object]:
    """The parent is in the middle of a read when the workers fork; once it closed that read,
    the same dataset is read through forked workers again."""
    dataset = CacheDataset(endpoint, name, batch_rows=BATCH)
    stream: Iterator[dict[str, torch.Tensor]] = iter(dataset)
    next(stream)
    outcome = {"held": forks.held(), **attempt(dataset)}
    stream.close()  # type: ignore[attr-defined]
    return {**outcome, "ids": forked_ids(dataset)}


def foreign_client(endpoint: str, name: str) -> dict[str, object]:
    """The parent read through the cache and keeps a plain pyarrow.flight client open, which
    this package does not track: its gRPC threads outlive the wait before the fork."""
    next(iter(CacheDataset(endpoint, name, batch_rows=BATCH)))
    client = flight.FlightClient(endpoint)
    try:
        client.wait_for_available(timeout=WORKER_TIMEOUT)
        forks.SHUTDOWN_TIMEOUT = 0.5  # type: ignore[misc]  # the wait is bounded, not skipped
        return {"held": forks.held(), **attempt(CacheDataset(endpoint, name))}
    finally:
        client.close()


def server_in_process(endpoint: str, name: str) -> dict[str, object]:
    """The parent runs a cache itself (its gRPC server is still up) when the workers fork."""
    with LocalCache(1) as cache:
        cache.head.load_table(name, pa.table({"id": np.arange(100)}))
        return {"held": forks.held(), **attempt(CacheDataset(cache.endpoint, name))}


SCENARIOS: dict[str, Callable[[str, str], dict[str, object]]] = {
    # In this order: each leaves nothing open, except the last.
    "after-reads": after_reads,
    "open-read": open_read,
    "foreign-client": foreign_client,
    "server-in-process": server_in_process,
}

if __name__ == "__main__":
    endpoint, name = sys.argv[1:3]
    outcomes: dict[str, object] = {"threads_at_start": forks.grpc_threads()}
    for scenario, run in SCENARIOS.items():
        outcomes[scenario] = run(endpoint, name)
    print(json.dumps(outcomes), flush=True)
