"""trainer-controller render: YAML stream out, runtime lookup, non-zero exit on bad input."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from runtime_cases import make_job, make_runtime, replicated_job
from trainer_controller.cli import cli


def _write(tmp_path: Path, name: str, *docs: dict) -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(docs))
    return path


def test_render_uses_builtin_runtime(tmp_path: Path) -> None:
    job = _write(tmp_path, "job.yaml", make_job(numNodes=2))
    result = CliRunner().invoke(cli, ["render", "-f", str(job)])
    assert result.exit_code == 0, result.output
    docs = list(yaml.safe_load_all(result.output))
    assert [(d["kind"], d["metadata"]["name"]) for d in docs] == [
        ("ConfigMap", "alpha-runtime-snapshot"),
        ("JobSet", "alpha"),
    ]


def test_render_prefers_runtime_from_files(tmp_path: Path) -> None:
    runtime = make_runtime({"torch": {}}, [replicated_job("node", "trainer")])
    runtime["metadata"]["name"] = "torch-distributed"
    files = [_write(tmp_path, "job.yaml", make_job()), _write(tmp_path, "runtime.yaml", runtime)]
    result = CliRunner().invoke(cli, ["render", *[arg for f in files for arg in ("-f", str(f))]])
    assert result.exit_code == 0, result.output
    jobset = list(yaml.safe_load_all(result.output))[-1]
    assert (
        jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][
            0
        ]["image"]
        == "busybox"
    )


def test_render_prints_the_deprecated_runtime_warning_on_stderr(tmp_path: Path) -> None:
    runtime = make_runtime({"torch": {}}, [replicated_job("node", "trainer")])
    runtime["metadata"]["labels"] = {"trainer.kubeflow.org/support": "deprecated"}
    files = [
        _write(tmp_path, "job.yaml", make_job(runtime="custom")),
        _write(tmp_path, "runtime.yaml", runtime),
    ]
    result = CliRunner().invoke(cli, ["render", *[arg for f in files for arg in ("-f", str(f))]])
    assert result.exit_code == 0, result.stderr
    assert result.stderr.startswith(
        "Warning: TrainJob 'alpha': Referenced ClusterTrainingRuntime \"custom\" is deprecated"
    )
    assert [d["kind"] for d in yaml.safe_load_all(result.stdout)] == ["ConfigMap", "JobSet"]


def test_render_invalid_job_exits_non_zero_with_field_messages(tmp_path: Path) -> None:
    job = _write(tmp_path, "job.yaml", make_job(env=[{"name": "PET_NNODES", "value": "3"}]))
    result = CliRunner().invoke(cli, ["render", "-f", str(job)])
    assert result.exit_code == 1
    assert "spec.trainer.env[0].name: PET_NNODES is reserved" in result.output


def test_render_flux_runtime_prints_scripts_secret_and_wrapped_jobset(tmp_path: Path) -> None:
    runtime = make_runtime({"flux": {}}, [replicated_job("node", "trainer")])
    files = [
        _write(tmp_path, "job.yaml", make_job(runtime="custom", numNodes=2, command=["lmp"])),
        _write(tmp_path, "rt.yaml", runtime),
    ]
    result = CliRunner().invoke(cli, ["render", *[arg for f in files for arg in ("-f", str(f))]])
    assert result.exit_code == 0, result.output
    docs = list(yaml.safe_load_all(result.output))
    assert [(d["kind"], d["metadata"]["name"]) for d in docs] == [
        ("ConfigMap", "alpha-runtime-snapshot"),
        ("ConfigMap", "alpha-flux-entrypoint"),
        ("Secret", "alpha-flux-curve"),
        ("JobSet", "alpha"),
    ]
    assert "public-key" in docs[2]["stringData"]["curve.cert"]
    pod = docs[3]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert pod["containers"][0]["command"] == ["/bin/bash", "/etc/flux-config/entrypoint.sh", "lmp"]


def test_render_flux_runtime_with_bad_setting_exits_non_zero(tmp_path: Path) -> None:
    runtime = make_runtime({"flux": {}}, [replicated_job("node", "trainer")])
    job = make_job(runtime="custom", env=[{"name": "FLUX_QUEUE_POLICY", "value": "lifo"}])
    files = [_write(tmp_path, "job.yaml", job), _write(tmp_path, "rt.yaml", runtime)]
    result = CliRunner().invoke(cli, ["render", *[arg for f in files for arg in ("-f", str(f))]])
    assert result.exit_code == 1
    assert "spec.trainer.env[0].value: FLUX_QUEUE_POLICY must be one of fcfs" in result.output


def test_render_unknown_runtime_exits_non_zero(tmp_path: Path) -> None:
    job = _write(tmp_path, "job.yaml", make_job(runtime="nope"))
    result = CliRunner().invoke(cli, ["render", "-f", str(job)])
    assert result.exit_code == 1
    assert "no ClusterTrainingRuntime named 'nope'" in result.output


def test_render_unknown_field_exits_non_zero(tmp_path: Path) -> None:
    job = make_job()
    job["spec"]["trainr"] = {}
    result = CliRunner().invoke(cli, ["render", "-f", str(_write(tmp_path, "job.yaml", job))])
    assert result.exit_code == 1
    assert "trainr" in result.output


HEADER = b"apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata: {name: a}\n"
SPEC = b"spec: {runtimeRef: {name: torch-distributed}}\n"


def _alias_bomb() -> bytes:
    refs = "[" + ", ".join(["*x"] * 12) + "]"
    levels = ["a: &x {name: A, value: x}"] + [
        f"{key}: &x{level} " + refs.replace("*x", f"*x{level - 1}" if level > 1 else "*x")
        for level, key in enumerate("bcde", start=1)
    ]
    return HEADER + SPEC + ("anchors:\n" + "".join(f"  {line}\n" for line in levels)).encode()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param(_alias_bomb(), "excessive aliasing", id="alias-bomb"),
        pytest.param(
            HEADER + SPEC + b"x: " + b"[" * 1000 + b"]" * 1000, "deeper than 100", id="deep"
        ),
        pytest.param(HEADER.replace(b"{name: a}", b"{name: \xff}") + SPEC, "not UTF-8", id="bytes"),
        pytest.param(
            HEADER + b"metadata: {name: b}\n" + SPEC, "duplicate key 'metadata'", id="duplicate-key"
        ),
        pytest.param(
            HEADER + SPEC.replace(b"}}", b"}, trainer: {numNodes: 1000000000000}}"),
            "spec.trainer.numNodes: Input should be less than or equal to 2147483647",
            id="numNodes-over-int32",
        ),
        pytest.param(
            HEADER.replace(b"{name: a}", b"{name: a, namespace: Bad_NS}") + SPEC,
            "metadata.namespace: a namespace must be a DNS-1123 label",
            id="bad-namespace",
        ),
    ],
)
def test_render_hostile_input_is_one_clear_error(
    tmp_path: Path, content: bytes, message: str
) -> None:
    path = tmp_path / "job.yaml"
    path.write_bytes(content)
    result = CliRunner().invoke(cli, ["render", "-f", str(path)], catch_exceptions=False)
    assert result.exit_code == 1, result.output
    assert message in result.output
