"""Shared fixtures: tables, data files, in-process caches, and caches in child processes."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
import pyarrow as pa
import pyarrow.flight as flight
import pyarrow.parquet as pq
import pytest
from data_cache_testing import ADMIN_TOKEN, AS_ADMIN
from trainer_data_cache import ADMIN_TOKEN_ENV, LocalCache
from waiting import wait_until

START_TIMEOUT = 120.0
"""Seconds a child cache may take to print its endpoint (it imports torch and pyarrow)."""
WAIT_DEADLINE = 30.0
"""Seconds ``wait_until`` waits for a condition before failing the test."""


def make_table(rows: int, width: int = 4) -> pa.Table:
    """Rows whose ``id`` is their position, plus a float, a vector and a label column."""
    ids = np.arange(rows, dtype=np.int64)
    vectors = pa.FixedSizeListArray.from_arrays(
        pa.array(np.arange(rows * width, dtype=np.float32)), width
    )
    return pa.table(
        {
            "id": ids,
            "value": ids.astype(np.float64) / 2,
            "vector": vectors,
            "label": (ids % 7).astype(np.int32),
        }
    )


class ChildProcess:
    """A ``python -m trainer_data_cache ...`` child whose first output line is its endpoint; it
    takes admin calls with ``ADMIN_TOKEN`` unless ``env`` says otherwise."""

    def __init__(self, args: Sequence[str], env: dict[str, str] | None = None) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "trainer_data_cache", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, ADMIN_TOKEN_ENV: ADMIN_TOKEN, **(env or {})},
        )
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(
            target=lambda: lines.put(self.process.stdout.readline()),  # type: ignore[union-attr]
            daemon=True,
        ).start()
        try:
            self.endpoint = lines.get(timeout=START_TIMEOUT).strip()
        except queue.Empty:
            self.stop()
            raise RuntimeError(f"{args}: no endpoint within {START_TIMEOUT} s") from None
        if not self.endpoint:
            _, error = self.process.communicate(timeout=30)
            raise RuntimeError(f"{args}: exited {self.process.returncode}: {error}")

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()


def push_table(endpoint: str, name: str, table: pa.Table) -> None:
    """Load ``table`` into the cache at ``endpoint`` as dataset ``name`` (head ``do_put``, with
    the admin token)."""
    client = flight.FlightClient(endpoint)
    try:
        writer, _ = client.do_put(
            flight.FlightDescriptor.for_path(name), table.schema, AS_ADMIN.call_options()
        )
        with writer:
            writer.write_table(table)
    finally:
        client.close()


def wait_for(condition: Callable[[], bool], what: str) -> None:
    """Return once ``condition()`` holds; fail after ``WAIT_DEADLINE`` s naming ``what``."""
    wait_until(condition, what, WAIT_DEADLINE, interval=0.01)


@pytest.fixture(scope="session", name="wait_until")
def wait_until_fixture() -> Callable[[Callable[[], bool], str], None]:
    """``wait_for``, for tests."""
    return wait_for


@pytest.fixture(scope="session")
def table_of() -> Callable[[int], pa.Table]:
    """``make_table``, for tests (conftest is not importable under ``--import-mode=importlib``)."""
    return make_table


@pytest.fixture(scope="session")
def push() -> Callable[[str, str, pa.Table], None]:
    """``push_table``, for tests."""
    return push_table


@pytest.fixture
def child_process() -> Iterator[Callable[..., ChildProcess]]:
    """Start ``python -m trainer_data_cache ARGS`` children; each is stopped after the test."""
    children: list[ChildProcess] = []

    def start(args: Sequence[str], env: dict[str, str] | None = None) -> ChildProcess:
        children.append(ChildProcess(args, env))
        return children[-1]

    yield start
    for child in children:
        child.stop()


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("data")


@pytest.fixture(scope="session")
def remote_cache(data_dir: Path) -> Iterator[str]:
    """A head and three nodes (two replicas per partition) in a child process, so tests can
    fork DataLoader workers (gRPC servers must not live in a process that forks)."""
    path = data_dir / "seed.parquet"
    pq.write_table(make_table(11), path)
    child = ChildProcess(["serve", str(path), "--nodes", "3", "--replicas", "2"])
    try:
        yield child.endpoint
    finally:
        child.stop()


@pytest.fixture
def local_cache() -> Iterator[LocalCache]:
    """A head and two nodes in this process (for tests without DataLoader workers)."""
    with LocalCache(2) as cache:
        yield cache
