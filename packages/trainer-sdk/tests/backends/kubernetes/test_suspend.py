"""``trainer suspend`` / ``trainer resume`` and ``TrainerClient.suspend_job`` / ``resume_job``:
``spec.suspend`` of the TrainJob in the API stand-in; the local backend refuses clearly."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from trainer_sdk import CustomTrainer, JobNotFoundError, TrainerClient
from trainer_sdk.cli import cli

from .test_backend import TRAINJOBS, client, namespace, server, train_function

__all__ = ["client", "namespace", "server"]  # the fixtures this module uses


def suspended(server: Any, namespace: str, name: str) -> object:
    status, body = server.request("GET", f"{TRAINJOBS.format(namespace=namespace)}/{name}")
    assert status == 200, body
    return body["spec"].get("suspend")


def test_the_client_suspends_and_resumes(
    client: TrainerClient, server: Any, namespace: str
) -> None:
    name = client.train(trainer=CustomTrainer(func=train_function))
    client.suspend_job(name)
    assert suspended(server, namespace, name) is True
    client.resume_job(name)
    assert suspended(server, namespace, name) is False
    with pytest.raises(JobNotFoundError, match="'nope' not found"):
        client.suspend_job("nope")


def test_the_cli_suspends_and_resumes(
    client: TrainerClient,
    server: Any,
    namespace: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kubeconfig = server.write_kubeconfig(tmp_path / "kc", namespace=namespace)
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))  # kubectl's rule (trainer_api.kubeconfig)
    name = client.train(trainer=CustomTrainer(func=train_function))
    for command, expected in (("suspend", True), ("resume", False)):
        result = CliRunner().invoke(cli, ["--backend", "kubernetes", command, name])
        assert result.exit_code == 0, result.stderr
        assert f"TrainJob {name} {command}" in result.stderr
        assert suspended(server, namespace, name) is expected
    result = CliRunner().invoke(cli, ["--backend", "kubernetes", "suspend", "nope"])
    assert result.exit_code == 1 and "'nope' not found" in result.stderr


def test_suspending_an_unknown_local_job_names_it(tmp_path: Path) -> None:
    """The local backend suspends too (tests/checkpoint/test_local_suspend.py); a name it does
    not know is refused by name."""
    result = CliRunner().invoke(
        cli, ["--backend", "local", "--root", str(tmp_path), "suspend", "some-job"]
    )
    assert result.exit_code == 1
    assert "TrainJob 'some-job' not found" in result.stderr
