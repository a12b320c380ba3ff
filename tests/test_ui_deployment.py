"""The UI Deployment of trainer-controller's manifests runs the SDK's ``trainer ui`` as written."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from trainer_sdk.cli import cli

DEPLOYMENT = (
    Path(__file__).resolve().parents[1]
    / "packages/trainer-controller/manifests/ui/base/deployment.yaml"
)


@pytest.mark.parametrize(("env_value", "read_only"), [("true", True), ("false", False)])
def test_the_deployment_arguments_are_the_ui_commands(
    monkeypatch: pytest.MonkeyPatch, env_value: str, read_only: bool
) -> None:
    container = yaml.safe_load(DEPLOYMENT.read_text())["spec"]["template"]["spec"]["containers"][0]
    args = container["args"]
    assert args[:3] == ["--backend", "kubernetes", "ui"]
    env = {item["name"]: item["value"] for item in container["env"]}
    assert set(env) == {"TRAINER_UI_READ_ONLY", "TRAINER_UI_HISTORY"}
    monkeypatch.setenv("TRAINER_UI_READ_ONLY", env_value)
    monkeypatch.setenv("TRAINER_UI_HISTORY", env["TRAINER_UI_HISTORY"])
    with cli.commands["ui"].make_context("ui", args[3:]) as context:
        assert context.params == {
            "host": "127.0.0.1",
            "port": 8265,
            "token": None,
            "read_only": read_only,
            "namespace": "default",
            "history": Path(env["TRAINER_UI_HISTORY"]),  # on the Deployment's claim
            "history_days": 30.0,
        }
