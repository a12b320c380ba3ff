"""``plan_optimization`` without a server: trials from history, stopping, failures, bad specs."""

from __future__ import annotations

import json
import math
from datetime import datetime, timezone
from typing import Any

from trainer_api import (
    EARLY_STOPPING_ANNOTATION,
    MAX_FAILED_TRIALS_ANNOTATION,
    PARAMETERS_ANNOTATION,
)
from trainer_controller.operator.admission import validation_errors
from trainer_controller.operator.optimization import plan_optimization
from trainer_search import PRUNED_ANNOTATION, STEPS_ANNOTATION, TRIAL_ANNOTATION

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


def job(num: int = 4, parallel: int = 2, **annotations: str) -> dict[str, Any]:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "OptimizationJob",
        "metadata": {
            "name": "tune",
            "namespace": "default",
            "uid": "u-1",
            "annotations": annotations,
        },
        "spec": {
            "objectives": [{"metric": "loss"}],
            "searchAlgorithm": {"random": {"seed": 1}},
            "parameters": [{"name": "lr", "searchSpace": {"uniform": {"min": "0.1", "max": "1"}}}],
            "numTrials": num,
            "parallelTrials": parallel,
            "trainJobTemplate": {"spec": {"runtimeRef": {"name": "torch-distributed"}}},
        },
    }


def trial(
    number: int,
    loss: float | None,
    state: str | None,
    steps: dict[str, float] | None = None,
    stamp: str = "t1",
) -> dict[str, Any]:
    status: dict[str, Any] = {}
    if loss is not None:
        status["trainerStatus"] = {
            "metrics": [{"name": "loss", "value": repr(loss)}],
            "lastUpdatedTime": stamp,
        }
    if state is not None:
        status["conditions"] = [{"type": state, "status": "True"}]
    annotations = {PARAMETERS_ANNOTATION: json.dumps({"lr": "0.5"}), TRIAL_ANNOTATION: str(number)}
    if steps is not None:
        annotations[STEPS_ANNOTATION] = json.dumps({"seen": None, "steps": steps})
    return {
        "metadata": {"name": f"tune-{number}", "annotations": annotations},
        "spec": {},
        "status": status,
    }


def conditions(plan_status: dict[str, Any] | None) -> dict[str, tuple[str, str]]:
    return {
        c["type"]: (c["status"], c["reason"]) for c in (plan_status or {}).get("conditions", [])
    }


def test_a_new_job_gets_parallel_trials_with_the_parameters_applied() -> None:
    plan = plan_optimization(job(), [], NOW)
    assert [t["metadata"]["name"] for t in plan.create] == ["tune-0", "tune-1"]
    first = plan.create[0]
    lr = json.loads(first["metadata"]["annotations"][PARAMETERS_ANNOTATION])["lr"]
    assert first["spec"]["trainer"]["env"] == [{"name": "KUBEFLOW_TRAINER_OPT_LR", "value": lr}]
    assert conditions(plan.status)["Running"] == ("True", "TrialsRunning")
    # The same history gives the same trials: the plan is a function of its inputs.
    assert plan_optimization(job(), [], NOW).create == plan.create


def test_the_last_trial_finishing_completes_the_job_with_the_best_result() -> None:
    trials = [
        trial(0, 0.3, "Complete"),
        trial(1, 0.2, "Complete"),
        trial(2, None, "Failed"),
        trial(3, 0.9, "Complete"),
    ]
    plan = plan_optimization(job(), trials, NOW)
    assert plan.create == ()
    assert conditions(plan.status)["Complete"] == ("True", "MaxTrialsReached")
    assert plan.status is not None and plan.status["result"]["trainJobName"] == "tune-1"


def test_failures_beyond_the_budget_fail_the_job() -> None:
    trials = [trial(0, None, "Failed"), trial(1, None, "Failed")]
    plan = plan_optimization(job(**{MAX_FAILED_TRIALS_ANNOTATION: "1"}), trials, NOW)
    assert conditions(plan.status)["Failed"] == ("True", "MaxFailedTrialsReached")
    assert plan.create == ()


def test_a_bad_trial_is_pruned_by_suspending_it() -> None:
    rule = json.dumps({"rule": "median", "startupTrials": 1})
    good = {str(s): 1.0 / s for s in range(1, 6)}
    trials = [trial(0, 0.2, "Complete", good), trial(1, 5.0, None, {"1": 5.0}, stamp="t2")]
    plan = plan_optimization(job(**{EARLY_STOPPING_ANNOTATION: rule}), trials, NOW)
    (patch,) = [p for p in plan.patches if p.name == "tune-1"]
    assert patch.patch["spec"] == {"suspend": True}
    assert patch.patch["metadata"]["annotations"][PRUNED_ANNOTATION] == "1"


def test_an_invalid_job_fails_with_the_field() -> None:
    bad = job(**{EARLY_STOPPING_ANNOTATION: "{"})
    plan = plan_optimization(bad, [], NOW)
    status, reason = conditions(plan.status)["Failed"]
    assert (status, reason) == ("True", "InvalidSpec")
    assert plan.create == ()


def test_the_webhook_refuses_a_spec_change() -> None:
    old = job()
    new = job(num=5)
    errors = [str(e) for e in validation_errors(new, old)]
    assert errors == ["spec: OptimizationJobSpec is immutable and cannot be updated after creation"]
    assert validation_errors(old, old) == []


def test_a_diverged_trial_is_recorded_as_such_and_never_wins() -> None:
    trials = [
        trial(0, math.nan, "Complete"),
        trial(1, 0.7, "Complete"),
        trial(2, 0.9, "Complete"),
        trial(3, 0.8, "Complete"),
    ]
    plan = plan_optimization(job(), trials, NOW)
    assert plan.status is not None and plan.status["result"]["trainJobName"] == "tune-1"
    (patch,) = [p for p in plan.patches if p.name == "tune-0"]
    steps = json.loads(patch.patch["metadata"]["annotations"][STEPS_ANNOTATION])
    assert steps == {"seen": "t1", "steps": {"1": "nan"}, "checked": None}
    # The same report read again (same time stamp) is not a new step.
    recorded = {**trials[0]["metadata"]["annotations"], STEPS_ANNOTATION: json.dumps(steps)}
    again = {**trials[0], "metadata": {**trials[0]["metadata"], "annotations": recorded}}
    plan = plan_optimization(job(), [again, *trials[1:]], NOW)
    assert "tune-0" not in [p.name for p in plan.patches]
