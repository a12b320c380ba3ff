"""The command line: endpoint first, probes, and clean failures."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from trainer_data_cache.cli import ADMIN_TOKEN_ENV, TOKEN_ENV, main

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
