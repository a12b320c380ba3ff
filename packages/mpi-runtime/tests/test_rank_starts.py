"""Rank start reports: the rank side over a real loopback socket, the launcher's bounded wait."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest
from mpi_runtime import START_REPORT_ENV, InvalidArgumentError, StartWatch, report_start
from mpi_runtime.rank_starts import hosts_of, route_address


@pytest.fixture
def watch() -> Iterator[StartWatch]:
    with StartWatch("127.0.0.1") as started_watch:
        yield started_watch


def rank_environ(watch: StartWatch, rank: int, variable: str = "OMPI_COMM_WORLD_RANK") -> dict:
    return {START_REPORT_ENV: watch.env_value, variable: str(rank)}


def test_every_reported_rank_ends_the_wait_at_once(watch: StartWatch) -> None:
    for rank, variable in [(0, "OMPI_COMM_WORLD_RANK"), (1, "PMI_RANK")]:
        assert report_start(rank_environ(watch, rank, variable)) is None
    assert watch.wait(2, 30.0, lambda: False) == []
    assert watch.started() == {0, 1}


def test_ranks_that_never_report_are_returned_at_the_deadline(watch: StartWatch) -> None:
    assert report_start(rank_environ(watch, 1)) is None
    assert watch.wait(3, 0.4, lambda: False) == [0, 2]


def test_the_wait_ends_when_the_launch_is_over(watch: StartWatch) -> None:
    done = threading.Event()
    done.set()
    assert watch.wait(2, 30.0, done.is_set) == []


def test_a_report_with_another_token_is_ignored(watch: StartWatch) -> None:
    address = watch.env_value.split()[0]
    assert report_start({START_REPORT_ENV: f"{address} not-the-token", "PMI_RANK": "0"}) is None
    assert report_start(rank_environ(watch, 1)) is None
    assert watch.wait(2, 0.4, lambda: False) == [0]


@pytest.mark.parametrize(
    ("environ", "reason"),
    [
        pytest.param({}, None, id="not-asked"),
        pytest.param(
            {START_REPORT_ENV: "127.0.0.1:9 t"},
            "none of OMPI_COMM_WORLD_RANK, PMI_RANK",
            id="no-rank",
        ),
        pytest.param(
            {START_REPORT_ENV: "127.0.0.1:{closed} t", "PMI_RANK": "3"},
            "could not report rank 3's start to 127.0.0.1:",
            id="nobody-listens",
        ),
    ],
)
def test_report_start_says_why_it_could_not_report(environ: dict, reason: str | None) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]  # bound, never listening: connections are refused
        environ = {k: v.format(closed=closed) for k, v in environ.items()}
        got = report_start(environ, timeout_s=2.0)
    assert got is None if reason is None else reason in (got or "")


def test_wait_rejects_a_timeout_that_is_not_positive(watch: StartWatch) -> None:
    with pytest.raises(InvalidArgumentError, match="timeout_s: expected seconds > 0"):
        watch.wait(1, 0, lambda: False)


@pytest.mark.parametrize(
    ("ranks", "expected"),
    [
        pytest.param([2, 3], ["node-b"], id="one-host"),
        pytest.param([0, 3], ["node-a", "node-b"], id="two-hosts-in-rank-order"),
        pytest.param([4], ["(unknown host)"], id="rank-beyond-the-hostfile"),
    ],
)
def test_hosts_of(ranks: list[int], expected: list[str]) -> None:
    assert hosts_of(ranks, ["node-a", "node-a", "node-b", "node-b"]) == expected


def test_route_address_to_a_loopback_host_is_a_loopback_address() -> None:
    assert route_address("127.0.0.3", 22).startswith("127.")
