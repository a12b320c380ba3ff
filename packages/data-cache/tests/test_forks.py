"""DataLoader workers forked from a process that read from the cache: they read every row once,
or fail at once with UnsafeForkError naming the remedy; never hang.

The scenarios run in ``forked_loader.py``, in one fresh process (this one holds Flight
connections of its own), bounded by a timeout after which its whole process group is killed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.flight as flight
import pytest
from trainer_data_cache import ConnectOptions, forks

SCRIPT = Path(__file__).with_name("forked_loader.py")
ROWS = 1001
TIMEOUT = 150.0
"""Seconds for all scenarios, imports of torch and pyarrow included (a busy machine is slow)."""


@pytest.fixture(scope="module")
def outcomes(
    remote_cache: str,
    push: Callable[[str, str, pa.Table], None],
    table_of: Callable[[int], pa.Table],
) -> dict[str, Any]:
    push(remote_cache, "forked", table_of(ROWS))
    with subprocess.Popen(
        [sys.executable, str(SCRIPT), remote_cache, "forked"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its forked workers too, so that a hung one can be killed
    ) as process:
        try:
            out, err = process.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            pytest.fail(f"{SCRIPT.name}: still running after {TIMEOUT:g} s (a hang)")
    assert process.returncode == 0, f"{SCRIPT.name}: exited {process.returncode}: {err}"
    result: dict[str, Any] = json.loads(out.splitlines()[-1])
    return result


def test_workers_forked_right_after_reads_in_the_parent_read_every_row_once(
    outcomes: dict[str, Any],
) -> None:
    result = outcomes["after-reads"]
    # The dataset keeps its idle clients between iterations; the fork closes them first.
    assert result["held"] and all(held.startswith("client of grpc://") for held in result["held"])
    assert (result["error"], result["message"]) == (None, None)
    assert sorted(result["ids"]) == list(range(ROWS))


def test_the_guard_sees_the_grpc_threads_of_this_pyarrow(outcomes: dict[str, Any]) -> None:
    # The wait before a fork relies on gRPC's thread names; a pyarrow that renamed them fails here.
    assert outcomes["threads_at_start"] == []
    assert outcomes["after-reads"]["threads_while_reading"]


@pytest.mark.parametrize(
    ("scenario", "held", "reason", "rows_after"),
    [
        # Once the parent closed its read, the same dataset reads every row once. The parent
        # holds the head's and the node's clients, and maybe the next node's (opened ahead).
        pytest.param(
            "open-read",
            "client of grpc://",
            "Flight connection(s) open (client of grpc://",
            ROWS,
            id="parent-mid-read",
        ),
        pytest.param(
            "foreign-client",
            None,
            "still ran gRPC threads (event_engine",
            0,
            id="parent-keeps-a-plain-flight-client",
        ),
        pytest.param(
            "server-in-process",
            "server at grpc://",
            "server at grpc://",
            0,
            id="parent-runs-a-server",
        ),
    ],
)
def test_workers_forked_while_the_parent_runs_grpc_fail_fast(
    outcomes: dict[str, Any], scenario: str, held: str | None, reason: str, rows_after: int
) -> None:
    result = outcomes[scenario]
    if held is None:
        assert result["held"] == []
    else:
        assert any(description.startswith(held) for description in result["held"])
    assert result["error"] == "UnsafeForkError", result["message"]
    message = result["message"]
    assert "was forked while its parent" in message and reason in message
    assert 'multiprocessing_context="forkserver"' in message
    assert sorted(result["ids"]) == list(range(rows_after))


def test_close_closes_only_clients_this_process_recorded(remote_cache: str) -> None:
    description = f"client of {remote_cache}"
    before = forks.held().count(description)
    recorded = ConnectOptions().client(remote_cache)
    foreign = flight.FlightClient(remote_cache)  # as if inherited: not recorded here
    try:
        assert forks.held().count(description) == before + 1
        forks.close(recorded)
        forks.close(foreign)
        assert forks.held().count(description) == before
        with pytest.raises(pa.ArrowInvalid, match="closed"):
            recorded.wait_for_available(timeout=5)
        foreign.wait_for_available(timeout=5)  # still open
    finally:
        foreign.close()
