"""The one OptimizationJob lifecycle, as a table of observed states and the decisions they give."""

from __future__ import annotations

import json
import math
from datetime import datetime, timezone
from typing import Any

import pytest
from trainer_api import (
    MAX_FAILED_TRIALS_ANNOTATION,
    PARAMETERS_ANNOTATION,
    SUSPEND_ANNOTATION,
)
from trainer_search import (
    STEPS_ANNOTATION,
    TRIAL_ANNOTATION,
    ObservedTrial,
    TrialPhase,
    decide,
)

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


def job(
    num: int = 4,
    parallel: int = 2,
    parameters: list[dict[str, Any]] | None = None,
    algorithm: dict[str, Any] | None = None,
    **annotations: str,
) -> dict[str, Any]:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "OptimizationJob",
        "metadata": {"name": "tune", "namespace": "default", "annotations": annotations},
        "spec": {
            "objectives": [{"metric": "loss"}],
            "searchAlgorithm": algorithm or {"random": {"seed": 1}},
            "parameters": parameters
            or [{"name": "lr", "searchSpace": {"uniform": {"min": "0.1", "max": "1"}}}],
            "numTrials": num,
            "parallelTrials": parallel,
            "trainJobTemplate": {"spec": {"runtimeRef": {"name": "torch-distributed"}}},
        },
    }


def trial(
    number: int,
    phase: TrialPhase = "running",
    loss: float | None = None,
    parameters: dict[str, str] | None = None,
    job_name: str = "tune",
) -> ObservedTrial:
    annotations = {
        PARAMETERS_ANNOTATION: json.dumps(parameters or {"lr": "0.5"}),
        TRIAL_ANNOTATION: str(number),
    }
    return ObservedTrial(
        f"{job_name}-{number}", annotations, phase, {} if loss is None else {1: loss}
    )


def conditions(status: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {c["type"]: (c["status"], c["reason"], c["message"]) for c in status["conditions"]}


def test_a_driver_with_fewer_cores_runs_fewer_trials_and_says_so() -> None:
    decision = decide(job(num=6, parallel=4), [], NOW, capacity=2)
    assert [new.name for new in decision.create] == ["tune-0", "tune-1"]
    assert conditions(decision.status)["Running"] == (
        "True",
        "TrialsRunning",
        "2 trials running (parallelTrials 4; this driver runs at most 2 at once)",
    )
    # Without a cap of its own the job runs parallelTrials: the rule is the same for both.
    assert len(decide(job(num=6, parallel=4), [], NOW).create) == 4


def test_running_trials_are_never_started_twice() -> None:
    running = [trial(0), trial(1)]
    decision = decide(job(), running, NOW)
    assert decision.create == ()
    # One finishing frees one slot, for the next number.
    decision = decide(job(), [trial(0, "complete", 0.3), trial(1)], NOW)
    assert [new.number for new in decision.create] == [2]
    # A trial deleted by hand leaves its number unused, never taken again.
    decision = decide(job(), [trial(0, "complete", 0.3), trial(2, "complete", 0.4)], NOW)
    assert [new.name for new in decision.create] == ["tune-3", "tune-4"]


def test_the_same_observations_give_the_same_decision() -> None:
    trials = [trial(0, "complete", 0.3), trial(1, "failed")]
    assert decide(job(), trials, NOW) == decide(job(), trials, NOW)


def test_failures_beyond_the_budget_fail_the_job_and_stop_its_running_trials() -> None:
    trials = [trial(0, "failed"), trial(1, "failed"), trial(2)]
    decision = decide(job(**{MAX_FAILED_TRIALS_ANNOTATION: "1"}), trials, NOW)
    assert decision.phase == "Failed"
    assert conditions(decision.status)["Failed"] == (
        "True",
        "MaxFailedTrialsReached",
        "2 trials failed (max 1)",
    )
    assert decision.create == ()
    assert [(c.name, c.stop) for c in decision.changes if c.stop] == [("tune-2", True)]
    # Within the budget the job goes on.
    within = decide(job(**{MAX_FAILED_TRIALS_ANNOTATION: "2"}), trials, NOW)
    assert within.phase == "Running" and [new.number for new in within.create] == [3]


@pytest.mark.parametrize("diverged", [math.nan, math.inf, -math.inf], ids=str)
def test_a_diverged_trial_never_wins_and_keeps_its_value(diverged: float) -> None:
    trials = [
        trial(0, "complete", diverged, {"lr": "0.2"}),
        trial(1, "complete", 0.5, {"lr": "0.7"}),
        trial(2, "complete", 0.9, {"lr": "0.4"}),
        trial(3, "complete", 0.6, {"lr": "0.3"}),
    ]
    decision = decide(job(), trials, NOW)
    assert decision.phase == "Complete"
    assert decision.status["result"] == {
        "trainJobName": "tune-1",
        "parameters": [{"name": "lr", "value": "0.7"}],
    }
    first = decision.history[0]
    assert first.state == "failed" and first.objective is not None
    assert repr(first.objective) == repr(diverged)
    # What the trial carries is strict JSON, the value written by name.
    (change,) = [c for c in decision.changes if c.name == "tune-0"]
    steps = json.loads(change.annotations[STEPS_ANNOTATION], parse_constant=_refuse)
    assert steps["steps"] == {"1": repr(diverged)}


def _refuse(constant: str) -> float:
    raise ValueError(f"not strict JSON: {constant}")


def test_a_search_whose_every_trial_diverged_fails() -> None:
    trials = [trial(n, "complete", math.nan) for n in range(4)]
    decision = decide(job(), trials, NOW)
    assert "result" not in decision.status
    assert conditions(decision.status)["Failed"] == (
        "True",
        "NoTrialSucceeded",
        "no trial reported a finite objective",
    )


def test_a_suspended_job_suspends_its_running_trials_and_starts_none() -> None:
    decision = decide(job(**{SUSPEND_ANNOTATION: "true"}), [trial(0)], NOW)
    assert decision.create == ()
    assert [(c.name, c.suspend) for c in decision.changes] == [("tune-0", True)]
    assert conditions(decision.status)["Suspended"][0] == "True"


GRID = {
    "parameters": [
        {"name": "width", "searchSpace": {"categorical": {"choices": ["1", "2", "3", "4"]}}}
    ],
    "algorithm": {"grid": {}},
}


def test_a_warm_start_counts_the_earlier_search_but_not_towards_num_trials() -> None:
    earlier = [
        trial(0, "complete", 0.4, {"width": "1"}, job_name="old"),
        trial(1, "complete", 0.2, {"width": "3"}, job_name="old"),
        trial(2, "complete", 0.1, {"width": "9"}, job_name="old"),  # outside this space
        trial(3, "running", None, {"width": "2"}, job_name="old"),  # not finished
    ]
    decision = decide(job(num=2, parallel=2, **GRID), [], NOW, prior=earlier)
    # The grid's cells the earlier search tried are not tried again.
    assert [dict(new.parameters) for new in decision.create] == [{"width": "2"}, {"width": "4"}]
    assert [new.name for new in decision.create] == ["tune-0", "tune-1"]
    # The best trial is this job's own.
    finished = [
        trial(0, "complete", 0.8, {"width": "2"}),
        trial(1, "complete", 0.9, {"width": "4"}),
    ]
    assert (
        decide(job(num=2, **GRID), finished, NOW, prior=earlier).status["result"]["trainJobName"]
        == "tune-0"
    )
