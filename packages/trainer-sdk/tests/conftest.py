"""Shared fixtures: the upstream reference data and a runtime built from it."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from http.server import HTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from trainer_sdk import constants, types

REPO_ROOT = Path(__file__).resolve().parents[3]


def upstream_dir() -> Path:
    """Kubeflow Trainer / JobSet reference files ($TRAINER_UPSTREAM_DIR or ../shared/upstream)."""
    return Path(os.environ.get("TRAINER_UPSTREAM_DIR", REPO_ROOT / ".." / "shared" / "upstream"))


@pytest.fixture
def serve() -> Iterator[Callable[[HTTPServer], str]]:
    """``serve(server)`` runs an HTTP server in a thread until the test ends; its base URL."""
    running: list[tuple[HTTPServer, threading.Thread]] = []

    def start(server: HTTPServer) -> str:
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
        thread.start()
        running.append((server, thread))
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server, thread in running:
        server.shutdown()
        thread.join(timeout=5)
        server.server_close()


@pytest.fixture
def upstream_runtime_manifest() -> dict[str, Any]:
    path = (
        upstream_dir()
        / "kubeflow-trainer"
        / "manifests"
        / "base"
        / "runtimes"
        / "torch_distributed.yaml"
    )
    if not path.is_file():
        pytest.skip(f"upstream reference data not found at {path}")
    return dict(yaml.safe_load(path.read_text()))


def make_runtime(
    command: tuple[str, ...] = constants.TORCH_COMMAND,
    name: str = "torch-distributed",
    framework: str = "torch",
) -> types.Runtime:
    """A runtime whose trainer uses ``command`` as entrypoint (a BuiltinTrainer runtime when
    ``framework`` names an engine)."""
    builtin = framework in ("torchtune", "trl")
    trainer = types.RuntimeTrainer(
        trainer_type=(
            types.TrainerType.BUILTIN_TRAINER if builtin else types.TrainerType.CUSTOM_TRAINER
        ),
        framework=framework,
        image="pytorch/pytorch",
    )
    trainer.set_command(command)
    return types.Runtime(
        name=name, trainer=trainer, kind=types.RuntimeKind.CLUSTER_TRAINING_RUNTIME
    )


@pytest.fixture
def torch_runtime() -> types.Runtime:
    return make_runtime()
