"""``trainer optimize`` (a function or an OptimizationJob YAML) and ``trainer optimizationjob``."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from trainer_sdk.cli import cli


def invoke(tmp_path: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(
        cli, ["--backend", "local", "--root", str(tmp_path / "jobs"), *args], catch_exceptions=False
    )
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    ("param", "message"),
    [
        ("lr", "--param: expected NAME=uniform:MIN:MAX"),
        ("lr=normal:0:1", "unknown distribution 'normal'"),
        ("lr=loguniform:0:1", "loguniform needs min > 0"),
        ("lr=uniform:1", "--param: expected NAME=uniform:MIN:MAX"),
    ],
)
def test_bad_params_name_the_option(tmp_path: Path, param: str, message: str) -> None:
    script = tmp_path / "train.py"
    script.write_text("def train(lr):\n    print(f'loss={lr}')\n")
    code, _, err = invoke(tmp_path, "optimize", f"{script}:train", "--param", param)
    assert code == 2 and message in err


@pytest.mark.e2e
def test_optimize_a_function_then_list_get_and_delete(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(
        "def train(lr, opt):\n    print(f'loss={float(lr) * (2 if opt == \"sgd\" else 1)}')\n"
    )
    code, out, err = invoke(
        tmp_path,
        "optimize",
        f"{script}:train",
        "--param",
        "lr=loguniform:0.001:0.1",
        "--param",
        "opt=choice:sgd,adam",
        "--trials",
        "2",
        "--parallel",
        "2",
        "--algorithm",
        "tpe",
        "--seed",
        "3",
    )
    assert code == 0, err
    name = out.splitlines()[0]
    assert f"{name}: Complete" in out and "* best; importance" in out
    code, out, _ = invoke(tmp_path, "list", "optimizationjobs", "-o", "json")
    assert code == 0 and [job["name"] for job in json.loads(out)] == [name]
    code, out, _ = invoke(tmp_path, "list", "optimizationjobs")
    assert code == 0 and name in out and "TRIALS" in out
    # kubectl's form, and the older `trainer optimizationjob get` it aliases
    assert (
        invoke(tmp_path, "optimizationjob", "get", name)[1]
        == invoke(tmp_path, "get", "optimizationjob", name)[1]
    )
    code, out, _ = invoke(tmp_path, "get", "optimizationjob", name, "-o", "json")
    job = json.loads(out)
    assert code == 0 and len(job["trials"]) == 2 and job["algorithm"] == {"random_state": 3}
    for trial in job["trials"]:
        factor = 2 if trial["parameters"]["opt"] == "sgd" else 1
        assert trial["objective"] == pytest.approx(float(trial["parameters"]["lr"]) * factor)
    # The trials as a table to take elsewhere: CSV (a header, a row per trial) and JSON.
    code, out, _ = invoke(tmp_path, "optimizationjob", "export", name)
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and list(rows[0]) == [
        "trial",
        "state",
        "loss",
        "pruned_at_step",
        "best",
        "lr",
        "opt",
    ]
    by_name = {t["name"]: t for t in job["trials"]}
    for row in rows:
        trial = by_name[row["trial"]]
        assert (row["state"], float(row["loss"])) == ("Complete", trial["objective"])
        assert (row["lr"], row["opt"]) == (trial["parameters"]["lr"], trial["parameters"]["opt"])
    assert sum(row["best"] == "True" for row in rows) == 1
    exported = tmp_path / "trials.json"
    code, _, err = invoke(
        tmp_path, "optimizationjob", "export", name, "--format", "json", "-f", str(exported)
    )
    assert code == 0 and f"2 trials of {name} written to {exported}" in err
    assert [r["trial"] for r in json.loads(exported.read_text())] == [r["trial"] for r in rows]
    code, _, err = invoke(tmp_path, "optimizationjob", "resume", name)
    assert code == 0, err  # an ended job: nothing to drive, its table again
    code, _, err = invoke(tmp_path, "delete", "optimizationjob", name)
    assert code == 0 and f"optimizationjob/{name} deleted" in err
    code, _, err = invoke(tmp_path, "get", "optimizationjob", name)
    assert code == 1 and "not found" in err
    code, _, err = invoke(tmp_path, "list", "optimizationjobs")
    assert code == 0 and "No OptimizationJobs found" in err


@pytest.mark.e2e
def test_optimize_an_optimization_job_yaml_of_upstreams_schema(tmp_path: Path) -> None:
    command = "import os; print('loss=' + os.environ['KUBEFLOW_TRAINER_OPT_LR'])"
    manifest = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "OptimizationJob",
        "metadata": {"name": "yaml-tune"},
        "spec": {
            "objectives": [{"metric": "loss"}],
            "searchAlgorithm": {"random": {"seed": 2}},
            "parameters": [
                {"name": "lr", "searchSpace": {"logUniform": {"min": "0.001", "max": "0.1"}}}
            ],
            "numTrials": 2,
            "parallelTrials": 2,
            "trainJobTemplate": {
                "spec": {
                    "runtimeRef": {"name": "torch-distributed"},
                    "trainer": {"command": ["python", "-c", command]},
                }
            },
        },
    }
    path = tmp_path / "tune.yaml"
    path.write_text(yaml.safe_dump(manifest))
    code, out, err = invoke(tmp_path, "optimize", str(path))
    assert code == 0, err
    assert out.splitlines()[0] == "yaml-tune" and "yaml-tune: Complete" in out
    code, out, _ = invoke(tmp_path, "optimizationjob", "get", "yaml-tune", "-o", "json")
    for trial in json.loads(out)["trials"]:
        assert trial["objective"] == pytest.approx(float(trial["parameters"]["lr"]))
    bad = {
        **manifest,
        "metadata": {"name": "bad"},
        "spec": {**manifest["spec"], "parallelTrials": 3},
    }
    path.write_text(yaml.safe_dump(bad))
    code, _, err = invoke(tmp_path, "optimize", str(path))
    assert code == 2 and "parallelTrials cannot exceed numTrials" in err
