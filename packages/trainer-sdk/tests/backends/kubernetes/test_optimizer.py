"""The Kubernetes optimizer backend: the real ``kubernetes`` client against the API stand-in.
The tests play the controller (they create the trials it would, and write the status the one
search lifecycle decides) to check what the SDK reads."""

from __future__ import annotations

import json
import math
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from trainer_api import OPTIMIZATION_JOB_LABEL, PARAMETERS_ANNOTATION
from trainer_sdk import CustomTrainer, KubernetesBackendConfig
from trainer_sdk.optimizer import (
    OptimizerClient,
    Search,
    SuccessiveHalving,
    TPESearch,
    TrainJobTemplate,
    TrialConfig,
)
from trainer_search import TRIAL_ANNOTATION, decide, observe_trainjob

from .test_backend import TRAINJOBS, namespace, server  # noqa: F401 - the shared fixtures

OPTIMIZATIONJOBS = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/{namespace}/optimizationjobs"


def train_fn(lr: str) -> None:
    print(f"loss={lr}")


@pytest.fixture
def optimizer(server: Any, namespace: str, tmp_path: Path) -> OptimizerClient:  # noqa: F811
    kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig", namespace=namespace)
    return OptimizerClient(KubernetesBackendConfig(config_file=str(kubeconfig)))


def add_trial(
    server: Any,  # noqa: F811
    namespace: str,  # noqa: F811
    job: str,
    number: int,
    lr: str,
    loss: str,
    annotations: dict[str, str] | None = None,
) -> None:
    trial = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {
            "name": f"{job}-{number}",
            "labels": {OPTIMIZATION_JOB_LABEL: job},
            "annotations": {
                PARAMETERS_ANNOTATION: json.dumps({"lr": lr}),
                TRIAL_ANNOTATION: str(number),
                **(annotations or {}),
            },
        },
        "spec": {"runtimeRef": {"name": "torch-distributed"}},
    }
    path = TRAINJOBS.format(namespace=namespace)
    assert server.request("POST", path, trial)[0] == 201
    status = {
        "status": {
            "conditions": [
                {
                    "type": "Complete",
                    "status": "True",
                    "reason": "Done",
                    "message": "",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                }
            ],
            "trainerStatus": {
                "metrics": [{"name": "loss", "value": loss}],
                "lastUpdatedTime": "2026-01-01T00:00:00Z",
            },
        }
    }
    code, body = server.request(
        "PATCH", f"{path}/{job}-{number}/status", status, "application/merge-patch+json"
    )
    assert code == 200, body


def write_status(server: Any, namespace: str, job: str) -> None:  # noqa: F811
    """The status the controller writes: what ``trainer_search.decide`` says of the trials."""
    path = f"{OPTIMIZATIONJOBS.format(namespace=namespace)}/{job}"
    manifest = server.request("GET", path)[1]
    _, listed = server.request(
        "GET",
        f"{TRAINJOBS.format(namespace=namespace)}?labelSelector={OPTIMIZATION_JOB_LABEL}={job}",
    )
    trials = [observe_trainjob(item, "loss") for item in listed["items"]]
    status = decide(manifest, trials, datetime.now(timezone.utc)).status
    code, body = server.request(
        "PATCH", f"{path}/status", {"status": status}, "application/merge-patch+json"
    )
    assert code == 200, body


def test_optimize_creates_an_optimization_job_of_upstreams_schema(
    optimizer: OptimizerClient,
    server: Any,  # noqa: F811
    namespace: str,  # noqa: F811
) -> None:
    name = optimizer.optimize(
        TrainJobTemplate(runtime="torch-distributed", trainer=CustomTrainer(func=train_fn)),
        trial_config=TrialConfig(num_trials=3, parallel_trials=2),
        search_space={"lr": Search.loguniform(1e-4, 1e-1)},
        algorithm=TPESearch(random_state=7),
        early_stopping=SuccessiveHalving(),
    )
    code, stored = server.request("GET", f"{OPTIMIZATIONJOBS.format(namespace=namespace)}/{name}")
    assert code == 200
    spec = stored["spec"]
    assert spec["searchAlgorithm"] == {"random": {"seed": 7}}
    assert (spec["numTrials"], spec["parallelTrials"]) == (3, 2)
    assert spec["trainJobTemplate"]["spec"]["runtimeRef"]["name"] == "torch-distributed"
    assert stored["metadata"]["annotations"]["optimization.trainer.kubeflow.org/algorithm"] == "tpe"
    job = optimizer.get_job(name)
    assert (job.status, job.trials, job.algorithm) == ("Created", [], TPESearch(random_state=7))
    add_trial(server, namespace, name, 0, "0.01", "0.5")
    add_trial(server, namespace, name, 1, "0.02", "0.25")
    add_trial(server, namespace, name, 2, "0.05", "nan")  # diverged
    write_status(server, namespace, name)
    job = optimizer.get_job(name)
    objectives = [(t.name, t.objective) for t in job.trials]
    assert objectives[:2] == [(f"{name}-0", 0.5), (f"{name}-1", 0.25)]
    assert objectives[2][0] == f"{name}-2" and math.isnan(objectives[2][1] or 0.0)
    best = optimizer.get_best_results(name)
    assert best is not None and best.parameters == {"lr": "0.02"}  # never the NaN trial
    assert [j.name for j in optimizer.list_jobs()] == [name]
    optimizer.delete_job(name)
    assert server.request("GET", f"{OPTIMIZATIONJOBS.format(namespace=namespace)}/{name}")[0] == 404
    with pytest.raises(RuntimeError, match="Failed to get OptimizationJob"):
        optimizer.get_job(name)


def fit(lr: float, opt: str, epochs: int) -> None:
    import json

    print(json.dumps({"lr": lr, "opt": opt, "epochs": epochs}))


def run_function_of(trainjob: dict[str, Any], tmp_path: Path) -> str:
    """Run the Python the trial's command carries (the function and its call) in a fresh
    interpreter with the trial's env, as its container would; returns what it printed."""
    import base64
    import os
    import re
    import subprocess
    import sys

    trainer = trainjob["spec"]["trainer"]
    tokens = re.findall(r"[A-Za-z0-9+/]{16,}={0,2}", " ".join(trainer["command"]))
    sources = [base64.b64decode(t).decode(errors="replace") for t in tokens]
    code = next(source for source in sources if "def fit(" in source)
    (tmp_path / "fit.py").write_text(code)
    env = {**os.environ, **{item["name"]: item["value"] for item in trainer["env"]}}
    done = subprocess.run(
        [sys.executable, str(tmp_path / "fit.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout


def test_a_cluster_trial_gets_its_parameters_as_typed_keyword_arguments(
    optimizer: OptimizerClient,
    server: Any,  # noqa: F811
    namespace: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    """KEP-3562: the controller puts KUBEFLOW_TRAINER_OPT_<NAME> into the trial's env; the
    function trainer's call reads them back as keyword arguments, typed as locally."""
    from trainer_search import trial_trainjob

    name = optimizer.optimize(
        TrainJobTemplate(
            runtime="torch-distributed",
            trainer=CustomTrainer(func=fit, func_args={"epochs": 2, "lr": 1.0}),
        ),
        trial_config=TrialConfig(num_trials=2),
        search_space={
            "lr": Search.loguniform(1e-4, 1e-1),
            "opt": Search.choice(["sgd", "adam"]),
        },
    )
    code, stored = server.request("GET", f"{OPTIMIZATIONJOBS.format(namespace=namespace)}/{name}")
    assert code == 200
    trial = trial_trainjob(stored, 0, {"lr": 0.0125, "opt": "adam"}, {})  # the controller's
    assert {"name": "KUBEFLOW_TRAINER_OPT_LR", "value": "0.0125"} in trial["spec"]["trainer"]["env"]
    printed = json.loads(run_function_of(trial, tmp_path))
    assert printed == {"lr": 0.0125, "opt": "adam", "epochs": 2}  # the trial's lr wins
    assert [type(printed[k]) for k in ("lr", "opt")] == [float, str]


def test_a_pruned_trial_and_its_curve_are_read_from_the_controllers_annotations(
    optimizer: OptimizerClient,
    server: Any,  # noqa: F811
    namespace: str,  # noqa: F811
) -> None:
    from trainer_search import PRUNED_ANNOTATION, STEPS_ANNOTATION

    name = optimizer.optimize(
        TrainJobTemplate(runtime="torch-distributed", trainer=CustomTrainer(func=train_fn)),
        trial_config=TrialConfig(num_trials=2),
        search_space={"lr": Search.loguniform(1e-4, 1e-1)},
        early_stopping=SuccessiveHalving(),
    )
    steps = {"seen": None, "steps": {"1": 0.9, "3": 0.7}}
    add_trial(
        server,
        namespace,
        name,
        0,
        "0.01",
        "0.5",
        {STEPS_ANNOTATION: json.dumps({"steps": {"1": 0.6, "2": 0.5}})},
    )
    add_trial(
        server,
        namespace,
        name,
        1,
        "0.09",
        "0.1",  # lower than trial 0's, but pruned
        {STEPS_ANNOTATION: json.dumps(steps), PRUNED_ANNOTATION: "3"},
    )
    trials = optimizer.get_job(name).trials
    assert [(t.name, t.pruned_at_step) for t in trials] == [(f"{name}-0", None), (f"{name}-1", 3)]
    assert optimizer.backend.trial_histories(name) == {
        f"{name}-0": {1: 0.6, 2: 0.5},
        f"{name}-1": {1: 0.9, 3: 0.7},
    }
    write_status(server, namespace, name)
    best = optimizer.get_best_results(name)
    assert best is not None and best.parameters == {"lr": "0.01"}  # a pruned trial never is
