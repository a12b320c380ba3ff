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
    assert code == 2 and "invalid YAML" in err


HEADER = "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
VALID_SPEC = "spec: {runtimeRef: {name: torch-distributed}, trainer: {command: ['true']}}\n"


def _alias_bomb() -> str:
    refs = "[" + ", ".join(["*e"] * 12) + "]"
    return (
        HEADER
        + "metadata:\n  name: bomb\n  labels:\n"
        + f"    a: &e {{name: A, value: x}}\n    b: &e2 {refs}\n"
        + "    c: &e3 "
        + refs.replace("*e", "*e2")
        + "\n"
        + "    d: &e4 "
        + refs.replace("*e", "*e3")
        + "\n"
        + "    f: &e5 "
        + refs.replace("*e", "*e4")
        + "\n"
        + VALID_SPEC
    )


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param(_alias_bomb().encode(), "excessive aliasing", id="alias-bomb"),
        pytest.param(
            (
                HEADER + "metadata: {name: a}\n" + VALID_SPEC + "x: " + "[" * 1000 + "]" * 1000
            ).encode(),
            "nesting deeper than 100 levels",
            id="deep-nesting",
        ),
        pytest.param(
            (HEADER + "metadata: {name: \xe9t\xe9}\n").encode("latin-1"),
            "not UTF-8 text: byte 0xe9",
            id="not-utf8",
        ),
        pytest.param(
            (HEADER + "metadata: {name: 12345}\n" + VALID_SPEC).encode(),
            "TrainJob: metadata.name: Input should be a valid string (got 12345)",
            id="numeric-name",
        ),
        pytest.param(
            (HEADER + "metadata: [1]\n" + VALID_SPEC).encode(),
            "TrainJob: metadata: Input should be a valid dictionary",
            id="metadata-list",
        ),
        pytest.param(
            (HEADER + "metadata: {name: a}\nspec: 5\n").encode(), "TrainJob: spec:", id="spec-int"
        ),
        pytest.param(
            (HEADER + "metadata: {name: a}\nmetadata: {name: b}\n" + VALID_SPEC).encode(),
            "duplicate key 'metadata'",
            id="duplicate-key",
        ),
        pytest.param(
            (
                HEADER
                + "metadata: {name: a}\n"
                + VALID_SPEC.replace("command: ['true']", "numNodes: 1000000000000")
            ).encode(),
            "spec.trainer.numNodes: Input should be less than or equal to 2147483647",
            id="numNodes-over-int32",
        ),
        pytest.param(
            (HEADER + "metadata: {name: a, namespace: Bad_NS}\n" + VALID_SPEC).encode(),
            "metadata.namespace: a namespace must be a DNS-1123 label",
            id="bad-namespace",
        ),
        pytest.param(
            (
                HEADER
                + "metadata: {name: a}\n"
                + VALID_SPEC.replace("command: ['true']", "env: [{name: '1 bad=name', value: x}]")
            ).encode(),
            "spec.trainer.env[0].name: an environment variable name",
            id="bad-env-name",
        ),
    ],
)
def test_hostile_manifest_is_one_clear_error(tmp_path: Path, content: bytes, message: str) -> None:
    manifest = tmp_path / "job.yaml"
    manifest.write_bytes(content)
    code, _, err = invoke(tmp_path, "run", "-f", str(manifest))
    assert code == 2, err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "jobs").exists() or not any((tmp_path / "jobs").iterdir())


def test_nodes_option_over_int32_is_refused(tmp_path: Path) -> None:
    manifest = tmp_path / "job.yaml"
    manifest.write_text(HEADER + "metadata: {name: a}\n" + VALID_SPEC)
    code, _, err = invoke(tmp_path, "run", "-f", str(manifest), "--nodes", str(10**12))
    assert code == 2 and "numNodes: Input should be less than or equal to 2147483647" in err


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
