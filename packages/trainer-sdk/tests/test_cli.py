"""The trainer CLI: exit codes equal job outcomes, clear errors for bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from trainer_sdk.cli import cli

FAILING_JOB = """
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: yaml-job
spec:
  runtimeRef:
    name: torch-distributed
  trainer:
    numNodes: 1
    command: ["bash", "-c", "echo from-yaml $GREETING; exit 4"]
"""

SCRIPT = """
import os
env = os.environ
print("rank", env["RANK"], "of", env["WORLD_SIZE"], "greeting", env.get("GREETING"))
"""


def invoke(tmp_path: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(
        cli, ["--backend", "local", "--root", str(tmp_path / "jobs"), *args], catch_exceptions=False
    )
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            ("run", "-f", "missing.yaml"), "-f: no such file 'missing.yaml'", id="missing-file"
        ),
        pytest.param(("run", "nope.py"), "TARGET: no such file 'nope.py'", id="missing-script"),
        pytest.param(
            ("run", "x.py", "--runtime", "nope"), "runtime 'nope' not found", id="unknown-runtime"
        ),
        pytest.param(
            ("run", "x.py", "--env", "NOEQUALS"), "--env: expected NAME=VALUE", id="bad-env"
        ),
        pytest.param(("run",), "give exactly one of TARGET", id="nothing-to-run"),
        pytest.param(
            ("run", "json:nope"), "module 'json' has no function 'nope'", id="no-function"
        ),
        pytest.param(("run", "no_such_module_x:f"), "cannot import module", id="no-module"),
        pytest.param(("run", "train"), "expected FILE.py or module:function", id="bad-target"),
    ],
)
def test_bad_input_exits_2_with_a_clear_message(
    tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    code, _, err = invoke(tmp_path, *args)
    assert code == 2
    assert message in err


def test_malformed_yaml_is_reported(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: TrainJob\nspec: [unclosed\n")
    code, _, err = invoke(tmp_path, "run", "-f", str(bad))
    assert code == 2 and "is not valid YAML" in err


def test_get_unknown_job_exits_1(tmp_path: Path) -> None:
    code, _, err = invoke(tmp_path, "get", "missing")
    assert code == 1 and "'missing' not found" in err


def test_runtimes_as_json(tmp_path: Path) -> None:
    code, out, _ = invoke(tmp_path, "runtimes", "--output", "json")
    assert code == 0
    names = [runtime["name"] for runtime in json.loads(out)]
    assert "torch-distributed" in names


@pytest.mark.e2e
def test_run_manifest_exits_with_the_jobs_failure(tmp_path: Path) -> None:
    manifest = tmp_path / "job.yaml"
    manifest.write_text(FAILING_JOB)
    code, out, err = invoke(tmp_path, "run", "-f", str(manifest), "--env", "GREETING=hi")
    assert code == 1
    assert "from-yaml hi" in out
    assert "TrainJob 'yaml-job' failed (step node-0)" in err
    code, out, _ = invoke(tmp_path, "list", "-o", "json")
    assert [(job["name"], job["status"]) for job in json.loads(out)] == [("yaml-job", "Failed")]


@pytest.mark.e2e
def test_run_python_file_on_two_nodes(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    code, out, err = invoke(
        tmp_path,
        "run",
        str(script),
        "--nodes",
        "2",
        "--procs-per-node",
        "1",
        "--env",
        "GREETING=hello",
        "--name",
        "file-job",
    )
    assert code == 0, err
    assert "[node-0] rank 0 of 2 greeting hello" in out
    assert "[node-1] rank 1 of 2 greeting hello" in out
    code, out, _ = invoke(tmp_path, "logs", "file-job", "--step", "node-1")
    assert code == 0 and "rank 1 of 2 greeting hello" in out
    code, _, _ = invoke(tmp_path, "wait", "file-job")
    assert code == 0
    code, _, _ = invoke(tmp_path, "delete", "file-job")
    assert code == 0
    assert invoke(tmp_path, "get", "file-job")[0] == 1


@pytest.mark.e2e
def test_run_gives_up_after_its_timeout_while_the_job_still_runs(tmp_path: Path) -> None:
    manifest = tmp_path / "job.yaml"
    manifest.write_text(FAILING_JOB.replace("exit 4", "sleep 120"))
    code, out, err = invoke(tmp_path, "run", "-f", str(manifest), "--timeout", "2")
    try:
        assert code == 124
        assert "from-yaml" in out and "timeout waiting for TrainJob 'yaml-job'" in err
    finally:
        assert invoke(tmp_path, "delete", "yaml-job")[0] == 0
