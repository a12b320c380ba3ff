"""Across packages: trainer-sdk runs what trainer-api parses and trainer-controller builds."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
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


def test_main_job_trains_on_two_nodes_and_prints_every_ranks_loss(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path), "TRAINER_SDK_ROOT": str(tmp_path / "jobs")}
    env.pop("KUBECONFIG", None)
    result = subprocess.run(
        [sys.executable, str(REPO_ROOT / "examples" / "main_job.py"), "--epochs", "1"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "node-0: [rank 0] epoch 1/1 step   0/" in result.stdout
    assert "node-1: [rank 1] epoch 1/1 step   0/" in result.stdout
    assert "test accuracy" in result.stdout
    assert "Complete (100%" in result.stdout
