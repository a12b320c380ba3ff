"""The command line: endpoint first, probes, and clean failures."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.flight as flight
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from trainer_data_cache.cli import ADMIN_TOKEN_ENV, TOKEN_ENV, main
from trainer_data_cache.server.grace import FORCED_EXIT_STATUS, close_within
from trainer_data_cache.tickets import ReadRequest

NO_TOKENS = {TOKEN_ENV: "", ADMIN_TOKEN_ENV: ""}


def test_serve_prints_the_endpoint_first_and_the_probe_sees_it_ready(remote_cache: str) -> None:
    assert re.fullmatch(r"grpc://127\.0\.0\.1:\d+", remote_cache)
    result = CliRunner().invoke(main, ["probe", remote_cache])
    assert result.exit_code == 0, result.output
    assert '"ready": true' in result.output and '"seed"' in result.output


def test_serve_of_a_missing_path_exits_2_naming_it(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["serve", str(tmp_path / "missing.parquet")])
    assert result.exit_code == 2
    assert "missing.parquet' does not exist" in result.output


def test_probe_of_nothing_exits_1() -> None:
    result = CliRunner().invoke(main, ["probe", "grpc://127.0.0.1:1", "--timeout", "2"])
    assert result.exit_code == 1 and "not reachable" in result.output


def test_probe_waits_up_to_its_deadline_then_exits_1() -> None:
    arguments = ["probe", "grpc://127.0.0.1:1", "--timeout", "0.5", "--wait", "1.5"]
    result = CliRunner().invoke(main, arguments)
    assert result.exit_code == 1 and "not reachable" in result.output
    assert "(waited 1.5 s)" in result.output


def test_probe_with_wait_returns_as_soon_as_the_cache_is_ready(remote_cache: str) -> None:
    result = CliRunner().invoke(main, ["probe", remote_cache, "--wait", "600"])
    assert result.exit_code == 0 and '"ready": true' in result.output


def test_tls_options_go_together(tmp_path: Path) -> None:
    certificate = tmp_path / "cert.pem"
    certificate.write_text("x")
    result = CliRunner().invoke(
        main, ["node", "--tls-cert", str(certificate)], env={ADMIN_TOKEN_ENV: "a"}
    )
    assert result.exit_code == 2 and "--tls-cert and --tls-key go together" in result.output


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(["serve", "x.parquet"], id="serve"),
        pytest.param(["head", "x.parquet", "--node", "grpc://127.0.0.1:1"], id="head"),
    ],
)
def test_a_negative_repair_interval_is_refused_naming_the_option(command: list[str]) -> None:
    result = CliRunner().invoke(main, [*command, "--repair-interval", "-1"])
    assert result.exit_code == 2
    assert "--repair-interval" in result.output and "-1" in result.output


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(["node"], id="node"),
        pytest.param(["head", "x.parquet", "--node", "grpc://127.0.0.1:1"], id="head"),
    ],
)
def test_nodes_and_heads_apart_need_an_admin_token(command: list[str]) -> None:
    result = CliRunner().invoke(main, command, env=NO_TOKENS)
    assert result.exit_code == 2
    assert f"set {ADMIN_TOKEN_ENV} (or {TOKEN_ENV})" in result.output


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(["serve", "x.parquet"], id="serve"),
        pytest.param(["node"], id="node"),
        pytest.param(["head", "x.parquet", "--node", "grpc://127.0.0.1:1"], id="head"),
    ],
)
def test_a_non_loopback_bind_without_a_read_token_is_refused(command: list[str]) -> None:
    env = {**NO_TOKENS, ADMIN_TOKEN_ENV: "a"}
    result = CliRunner().invoke(main, [*command, "--host", "0.0.0.0"], env=env)
    assert result.exit_code == 2
    assert f"--host 0.0.0.0: without {TOKEN_ENV}, anyone who reaches" in result.output


def test_serve_exits_on_sigterm_while_a_reader_holds_a_stream_unread(
    tmp_path: Path, child_process: Callable[..., Any]
) -> None:
    path = tmp_path / "big.parquet"
    pq.write_table(pa.table({"x": np.arange(2_000_000)}), path)
    child = child_process(["serve", str(path), "--nodes", "2", "--grace-period", "3"])
    head = flight.FlightClient(child.endpoint)
    request = ReadRequest("big", batch_rows=1024).to_bytes()
    info = head.get_flight_info(flight.FlightDescriptor.for_command(request))
    clients = [flight.FlightClient(point.locations[0]) for point in info.endpoints]
    readers = [c.do_get(p.ticket) for c, p in zip(clients, info.endpoints, strict=True)]
    for reader in readers:
        reader.read_chunk()  # then read no more, holding the streams open
    started = time.monotonic()
    child.process.send_signal(signal.SIGTERM)
    try:
        status = child.process.wait(timeout=60)  # before the fix: still running after 55 s
    finally:
        for client in (head, *clients):
            client.close()
    assert status in (0, FORCED_EXIT_STATUS)
    assert time.monotonic() - started < 60


def test_a_close_that_outlasts_the_grace_period_exits_the_process_saying_why() -> None:
    code = (
        "import threading\n"
        "from trainer_data_cache.server.grace import close_within\n"
        "close_within(threading.Event().wait, 0.5, print)\n"
        "print('not reached')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == FORCED_EXIT_STATUS
    assert "still open after the 0.5 s grace period" in result.stdout
    assert "not reached" not in result.stdout


def test_a_close_within_the_grace_period_returns_and_raises_its_error() -> None:
    closed: list[bool] = []
    close_within(lambda: closed.append(True), 30, print)
    assert closed == [True]

    def failing() -> None:
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        close_within(failing, 30, print)
