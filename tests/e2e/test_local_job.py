"""Across packages: trainer-sdk runs what trainer-api parses and trainer-controller builds."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from trainer_sdk.cli import cli

pytestmark = pytest.mark.e2e
REPO_ROOT = Path(__file__).resolve().parents[2]
UPSTREAM = Path(os.environ.get("TRAINER_UPSTREAM_DIR", REPO_ROOT / ".." / "shared" / "upstream"))


def test_upstream_multi_node_example_runs_locally(tmp_path: Path) -> None:
    """Kubeflow Trainer's examples/yaml/01-multi-node.yaml, unchanged but for two nodes."""
    example = UPSTREAM / "kubeflow-trainer" / "examples" / "yaml" / "01-multi-node.yaml"
    if not example.is_file():
        pytest.skip(f"upstream reference data not found at {example}")
    result = CliRunner().invoke(
        cli,
        ["--backend", "local", "--root", str(tmp_path), "run", "-f", str(example), "--nodes", "2"],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.stderr
    assert "[node-0] WORLD_SIZE: 2" in result.stdout
    assert "[node-1] RANK: 1" in result.stdout


def test_main_job_trains_on_two_nodes_and_reaches_its_test_accuracy(tmp_path: Path) -> None:
    """The quickstart as ``hatch run main`` runs it (three epochs, about 30 s on 2 cores)."""
    env = {**os.environ, "HOME": str(tmp_path), "TRAINER_SDK_ROOT": str(tmp_path / "jobs")}
    env.pop("KUBECONFIG", None)
    result = subprocess.run(
        [sys.executable, str(REPO_ROOT / "examples" / "main_job.py")],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "node-0: [rank 0] epoch 3/3 step   0/" in result.stdout
    assert "node-1: [rank 1] epoch 3/3 step   0/" in result.stdout
    accuracy = re.search(r"test accuracy (\S+) on 360 samples", result.stdout)
    assert accuracy is not None, result.stdout[-3000:]
    assert float(accuracy.group(1)) >= 0.9, result.stdout[-3000:]
    assert "Complete (100%" in result.stdout


@pytest.fixture
def hub() -> Iterator[str]:
    """A stand-in of the HuggingFace Hub API serving the data set tatsu-lab/alpaca (two files)."""
    files = {"data/train.json": b'[{"instruction": "hi"}]', "README.md": b"# alpaca"}
    routes = {
        "/api/datasets/tatsu-lab/alpaca/revision/main": json.dumps(
            {"siblings": [{"rfilename": name} for name in files]}
        ).encode(),
        **{f"/datasets/tatsu-lab/alpaca/resolve/main/{name}": body for name, body in files.items()},
    }

    class Handler(BaseHTTPRequestHandler):
        """Serves ``routes``; 404 otherwise."""

        def do_GET(self) -> None:
            body = routes.get(self.path, b"")
            self.send_response(200 if self.path in routes else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            """Quiet."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        thread.join(timeout=5)
        server.server_close()


def test_upstream_multi_step_example_initializes_the_dataset_first(
    tmp_path: Path, hub: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """examples/yaml/05-multi-step.yaml with the initializer volume mount its runtime lacks."""
    example = UPSTREAM / "kubeflow-trainer" / "examples" / "yaml" / "05-multi-step.yaml"
    if not example.is_file():
        pytest.skip(f"upstream reference data not found at {example}")
    runtime, job = (doc for doc in yaml.safe_load_all(example.read_text()) if doc)
    for replicated_job in runtime["spec"]["template"]["spec"]["replicatedJobs"]:
        pod = replicated_job["template"]["spec"]["template"]["spec"]
        pod["volumes"] = [{"name": "initializer", "emptyDir": {}}]
        pod["containers"][0]["volumeMounts"] = [{"name": "initializer", "mountPath": "/workspace"}]
    monkeypatch.setenv("HF_ENDPOINT", hub)
    manifest = tmp_path / "multi-step.yaml"
    manifest.write_text(yaml.safe_dump_all([runtime, job]))
    result = CliRunner().invoke(
        cli,
        ["--backend", "local", "--root", str(tmp_path / "jobs"), "run", "-f", str(manifest)],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.stderr
    assert (
        "[dataset-initializer] dataset initializer: 2 files from hf://tatsu-lab/alpaca"
        in result.stdout
    )
    assert "(2 entries)" in result.stdout and "[node-1] Training complete" in result.stdout
    step_order = [line.split("]")[0] for line in result.stdout.splitlines() if line.startswith("[")]
    assert step_order.index("[dataset-initializer") < step_order.index("[node-0")
