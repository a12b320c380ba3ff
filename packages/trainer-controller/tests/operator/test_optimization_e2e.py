"""The OptimizationJob controller end to end on the stand-in; the tests play the JobSet
controller and feed each trial's status as the progress endpoint does."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from trainer_api import OPTIMIZATION_JOB_LABEL, PARAMETERS_ANNOTATION, SUSPEND_ANNOTATION

pytestmark = pytest.mark.e2e
OPTIMIZATIONJOBS = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/optimizationjobs"


def optimization_job(name: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "OptimizationJob",
        "metadata": {"name": name, "annotations": annotations or {}},
        "spec": {
            "objectives": [{"metric": "loss", "direction": "Minimize"}],
            "searchAlgorithm": {"random": {"seed": 5}},
            "parameters": [
                {"name": "lr", "searchSpace": {"logUniform": {"min": "0.0001", "max": "0.1"}}},
                {"name": "optimizer", "searchSpace": {"categorical": {"choices": ["sgd", "adam"]}}},
            ],
            "numTrials": 6,
            "parallelTrials": 2,
            "trainJobTemplate": {
                "metadata": {"labels": {"team": "tuning"}},
                "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"numNodes": 1}},
            },
        },
    }


def loss(parameters: dict[str, str]) -> float:
    return (math.log10(float(parameters["lr"])) + 2) ** 2 + (
        0.1 if parameters["optimizer"] == "sgd" else 0.0
    )


def conditions(obj: dict[str, Any] | None) -> dict[str, str]:
    return {
        c["type"]: c["status"] for c in ((obj or {}).get("status") or {}).get("conditions") or []
    }


def trials(cluster, name: str) -> list[dict[str, Any]]:  # type: ignore[no-untyped-def]
    _, listed = cluster.server.request(
        "GET", f"{cluster.trainjobs}?labelSelector={OPTIMIZATION_JOB_LABEL}={name}"
    )
    return list(listed["items"])


def finish(cluster, trial: dict[str, Any], value: float) -> None:  # type: ignore[no-untyped-def]
    """Report the objective as the progress endpoint writes it, then complete the JobSet."""
    name = trial["metadata"]["name"]
    cluster.patch(
        f"{cluster.trainjobs}/{name}/status",
        {
            "status": {
                "trainerStatus": {
                    "progressPercentage": 100,
                    "metrics": [{"name": "loss", "value": repr(value)}],
                    "lastUpdatedTime": "2026-01-01T00:00:00Z",
                }
            }
        },
    )
    cluster.wait_for(lambda: cluster.get(f"{cluster.jobsets}/{name}"), what=f"the JobSet of {name}")
    done = {
        "type": "Completed",
        "status": "True",
        "reason": "Test",
        "message": "by the test",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    cluster.patch(f"{cluster.jobsets}/{name}/status", {"status": {"conditions": [done]}})
    cluster.wait_for(
        lambda: conditions(cluster.get(f"{cluster.trainjobs}/{name}")).get("Complete"),
        what=f"{name} Complete",
    )


def finish_next(cluster, name: str, finished: dict[str, float]) -> None:  # type: ignore[no-untyped-def]
    """Wait for a trial not yet finished (at most two run), finish it, note its objective."""
    pending = cluster.wait_for(
        lambda: [t for t in trials(cluster, name) if t["metadata"]["name"] not in finished] or None,
        what="a trial to run",
    )
    assert len(pending) <= 2, [t["metadata"]["name"] for t in pending]
    trial = pending[0]
    parameters = json.loads(trial["metadata"]["annotations"][PARAMETERS_ANNOTATION])
    finish(cluster, trial, loss(parameters))
    finished[trial["metadata"]["name"]] = loss(parameters)


def complete(cluster, name: str) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """The OptimizationJob once it is Complete."""
    found: dict[str, Any] = cluster.wait_for(
        lambda: (
            job
            if conditions(job := cluster.get(f"{OPTIMIZATIONJOBS}/{name}")).get("Complete")
            == "True"
            else None
        ),
        what=f"{name} Complete",
    )
    return found


def test_a_restarted_controller_neither_loses_nor_repeats_trials(cluster) -> None:  # type: ignore[no-untyped-def]
    first = cluster.replica()
    cluster.create(OPTIMIZATIONJOBS, optimization_job("resume"))
    finished: dict[str, float] = {}
    finish_next(cluster, "resume", finished)
    finish_next(cluster, "resume", finished)
    first.stop()
    # While no controller runs, the trials' TrainJobs stay as they were: the next controller
    # reads what it needs from them (trial numbers, parameters, reports) and creates no twin.
    before = sorted(t["metadata"]["name"] for t in trials(cluster, "resume"))
    cluster.replica("replica-b")
    while len(finished) < 6:
        finish_next(cluster, "resume", finished)
    done = complete(cluster, "resume")
    assert set(before) <= set(finished)
    names = [t["metadata"]["name"] for t in trials(cluster, "resume")]
    assert sorted(names) == sorted(finished) == [f"resume-{n}" for n in range(6)]
    assigned = {
        t["metadata"]["annotations"][PARAMETERS_ANNOTATION] for t in trials(cluster, "resume")
    }
    assert len(assigned) == 6
    assert done["status"]["result"]["trainJobName"] == min(finished, key=finished.__getitem__)


def test_six_trials_two_at_a_time_run_to_a_result(cluster) -> None:  # type: ignore[no-untyped-def]
    cluster.replica()
    job = cluster.create(OPTIMIZATIONJOBS, optimization_job("tune"))
    finished: dict[str, float] = {}
    while len(finished) < 6:
        finish_next(cluster, "tune", finished)
    done = complete(cluster, "tune")
    all_trials = trials(cluster, "tune")
    assert len(all_trials) == 6
    best = min(finished, key=lambda name: finished[name])
    result = done["status"]["result"]
    assert result["trainJobName"] == best
    (winner,) = [t for t in all_trials if t["metadata"]["name"] == best]
    assigned = json.loads(winner["metadata"]["annotations"][PARAMETERS_ANNOTATION])
    assert {p["name"]: p["value"] for p in result["parameters"]} == assigned
    for trial in all_trials:
        owner = trial["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["uid"], owner["controller"]) == (
            "OptimizationJob",
            job["metadata"]["uid"],
            True,
        )
        assert trial["metadata"]["labels"]["team"] == "tuning"
        parameters = json.loads(trial["metadata"]["annotations"][PARAMETERS_ANNOTATION])
        env = {e["name"]: e["value"] for e in trial["spec"]["trainer"]["env"]}
        assert env == {
            "KUBEFLOW_TRAINER_OPT_LR": parameters["lr"],
            "KUBEFLOW_TRAINER_OPT_OPTIMIZER": parameters["optimizer"],
        }
        assert 1e-4 <= float(parameters["lr"]) <= 0.1
    assert len({t["metadata"]["annotations"][PARAMETERS_ANNOTATION] for t in all_trials}) == 6
    assert cluster.server.request("DELETE", f"{OPTIMIZATIONJOBS}/tune")[0] == 200
    cluster.wait_for(
        lambda: trials(cluster, "tune") == [] or None, what="the trials garbage-collected"
    )


def test_suspended_job_starts_no_trial_until_resumed(cluster) -> None:  # type: ignore[no-untyped-def]
    cluster.replica()
    cluster.create(OPTIMIZATIONJOBS, optimization_job("paused", {SUSPEND_ANNOTATION: "true"}))
    cluster.wait_for(
        lambda: (
            conditions(cluster.get(f"{OPTIMIZATIONJOBS}/paused")).get("Suspended") == "True" or None
        ),
        what="the Suspended condition",
    )
    assert trials(cluster, "paused") == []
    cluster.patch(
        f"{OPTIMIZATIONJOBS}/paused", {"metadata": {"annotations": {SUSPEND_ANNOTATION: None}}}
    )
    started = cluster.wait_for(
        lambda: trials(cluster, "paused") or None, what="trials after resume"
    )
    assert len(started) <= 2
    state = cluster.wait_for(
        lambda: (
            conditions(cluster.get(f"{OPTIMIZATIONJOBS}/paused")).get("Suspended") == "False"
            or None
        ),
        what="Suspended False",
    )
    assert state


def test_a_builtin_trainer_trial_trains_with_its_parameters_as_trl_arguments(cluster) -> None:  # type: ignore[no-untyped-def]
    """An OptimizationJob the SDK submits for a TRL fine-tune: the operator's trial TrainJob
    keeps the template's TRL arguments and carries the trial's parameters, and the engine's pod
    side parses them into TRL's config over the template's (learning rate, LoRA rank)."""
    from trainer_sdk import BuiltinTrainer, KubernetesBackendConfig, LoraConfig, TRLConfig
    from trainer_sdk.optimizer import OptimizerClient, Search, TrainJobTemplate, TrialConfig
    from trainer_sdk.training.engines import trl_trainers

    cluster.replica()
    optimizer = OptimizerClient(
        KubernetesBackendConfig(config_file=str(cluster.kubeconfig), namespace="default")
    )
    config = TRLConfig(learning_rate=1e-4, max_steps=5, peft_config=LoraConfig(lora_rank=8))
    name = optimizer.optimize(
        TrainJobTemplate(trainer=BuiltinTrainer(config), runtime="trl-cpu"),
        trial_config=TrialConfig(num_trials=1),
        search_space={
            "learning_rate": Search.loguniform(1e-3, 1e-1),
            "lora_rank": Search.choice([2]),
        },
    )
    [trial] = cluster.wait_for(lambda: trials(cluster, name), what="the trial TrainJob")
    parameters = json.loads(trial["metadata"]["annotations"][PARAMETERS_ANNOTATION])
    trainer = trial["spec"]["trainer"]
    assert "--learning_rate=0.0001" in trainer["args"] and "--lora_r=8" in trainer["args"]
    runtime = cluster.get("/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes/trl-cpu")
    jobs = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    command = jobs[-1]["template"]["spec"]["template"]["spec"]["containers"][0]["command"]
    engine_arguments = command[command.index("trl") + 1 :]
    pod_env = {item["name"]: item["value"] for item in trainer["env"]}
    with pytest.MonkeyPatch.context() as patch:
        for variable, value in pod_env.items():
            patch.setenv(variable, value)
        _, training, model = trl_trainers.parse([*engine_arguments, *trainer["args"]])
    assert training.learning_rate == float(parameters["learning_rate"]) != 1e-4
    assert 1e-3 <= training.learning_rate <= 1e-1
    assert model.lora_r == 2 and model.use_peft
    assert training.max_steps == 5
