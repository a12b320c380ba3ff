"""The search core, without processes: suggestions, seeds, grids, pruning and the best trial."""

from __future__ import annotations

import dataclasses
import math
import subprocess
import sys
import textwrap

import pytest
from trainer_api import EarlyStopping, OptimizationJob, apply_defaults, parse
from trainer_search import (
    Choice,
    Range,
    Study,
    TrialRecord,
    best_trial,
    check_pruning,
    grid_size,
    parameter_importance,
    study_from_job,
    suggest,
)

SPACE = {
    "lr": Range(1e-4, 1e-1, log=True),
    "width": Range(1, 8, integer=True),
    "act": Choice(("relu", "tanh")),
}


def loss(parameters: dict[str, object]) -> float:
    lr = float(str(parameters["lr"]))
    return (math.log10(lr) + 2.0) ** 2 + 0.1 * float(str(parameters["width"]))


def run(study: Study, trials: int, parallel: int = 1) -> list[TrialRecord]:
    """Drive the core as a driver does: ask for free slots, record results."""
    history: list[TrialRecord] = []
    while len(history) < trials:
        for suggestion in suggest(study, history, min(parallel, trials - len(history))):
            value = loss(suggestion.parameters)
            history.append(
                TrialRecord(
                    len(history),
                    suggestion.parameters,
                    "complete",
                    value,
                    engine_state=suggestion.engine_state,
                )
            )
    return history


@pytest.mark.parametrize("algorithm", ["random", "tpe", "cmaes", "qmc"])
def test_suggestions_stay_in_the_space_and_repeat_with_a_seed(algorithm: str) -> None:
    study = Study(SPACE, algorithm=algorithm, seed=7)  # type: ignore[arg-type]
    first = run(study, 12, parallel=2)
    again = run(study, 12, parallel=2)
    assert [r.parameters for r in first] == [r.parameters for r in again]
    for record in first:
        assert 1e-4 <= float(record.parameters["lr"]) <= 1e-1
        assert isinstance(record.parameters["width"], int) and 1 <= record.parameters["width"] <= 8
        assert record.parameters["act"] in ("relu", "tanh")
    assert len({tuple(sorted(r.parameters.items())) for r in first}) > 6
    other = run(Study(SPACE, algorithm=algorithm, seed=8), 12, parallel=2)  # type: ignore[arg-type]
    assert [r.parameters for r in other] != [r.parameters for r in first]


def test_tpe_finds_a_better_objective_than_random_on_a_smooth_function() -> None:
    space = {"lr": Range(1e-4, 1e-1, log=True), "width": Range(1, 8, integer=True)}
    best = {}
    for algorithm in ("random", "tpe"):
        values = [
            min(r.objective or 0 for r in run(Study(space, algorithm=algorithm, seed=s), 40))
            for s in range(3)
        ]  # type: ignore[arg-type]
        best[algorithm] = sum(values) / len(values)
    assert best["tpe"] < best["random"]


def test_grid_walks_every_cell_once_then_stops() -> None:
    study = Study({"a": Choice(("1", "2")), "b": Choice(("x", "y", "z"))}, algorithm="grid")
    assert grid_size(study) == 6
    history = run_grid(study)
    assert sorted((r.parameters["a"], r.parameters["b"]) for r in history) == sorted(
        (a, b) for a in "12" for b in "xyz"
    )
    assert suggest(study, history, 3) == []


def run_grid(study: Study) -> list[TrialRecord]:
    history: list[TrialRecord] = []
    while batch := suggest(study, history, 4):
        history += [
            TrialRecord(len(history) + i, s.parameters, "complete", 1.0)
            for i, s in enumerate(batch)
        ]
    return history


def test_grid_refuses_ranges() -> None:
    with pytest.raises(ValueError, match="grid search needs choices; lr are ranges"):
        Study({"lr": Range(0.1, 1.0)}, algorithm="grid")


def curve(final: float, steps: int = 9) -> dict[int, float]:
    return {step: final + 1.0 / step for step in range(1, steps + 1)}


@pytest.mark.parametrize(
    "rule",
    [
        EarlyStopping(rule="median", startup_trials=2),
        EarlyStopping(rule="asha", reduction_factor=2),
    ],
)
def test_a_trial_worse_than_the_others_is_stopped_and_a_good_one_is_not(
    rule: EarlyStopping,
) -> None:
    study = Study({"lr": Range(0.1, 1.0)}, early_stopping=rule)
    history: list[TrialRecord] = []
    for number, final in enumerate((1.0, 1.1, 0.9)):
        record = TrialRecord(number, {"lr": 0.5}, "running", steps=curve(final))
        decision = check_pruning(study, [*history, record], number)
        history.append(
            TrialRecord(
                number,
                {"lr": 0.5},
                "complete",
                final,
                curve(final),
                decision.checked_step,
                decision.engine_state,
            )
        )
    bad = TrialRecord(3, {"lr": 0.5}, "running", steps=curve(5.0, steps=4))
    decision = check_pruning(study, [*history, bad], 3)
    assert decision.prune and decision.at_step is not None and decision.at_step <= 4
    good = TrialRecord(4, {"lr": 0.5}, "running", steps=curve(0.5, steps=4))
    kept = check_pruning(study, [*history, good], 4)
    assert not kept.prune and kept.checked_step == 4
    # Already looked at: asking again looks at nothing new.
    again = TrialRecord(
        4, {"lr": 0.5}, "running", steps=good.steps, checked_step=4, engine_state=kept.engine_state
    )
    assert check_pruning(study, [*history, again], 4).checked_step == 4


def test_best_trial_by_direction_ignores_failed_and_running() -> None:
    history = [
        TrialRecord(0, {"lr": 0.2}, "complete", 0.5),
        TrialRecord(1, {"lr": 0.3}, "failed"),
        TrialRecord(2, {"lr": 0.4}, "complete", 0.2),
        TrialRecord(3, {"lr": 0.5}, "running"),
    ]
    space = {"lr": Range(0.1, 1.0)}
    best = best_trial(Study(space), history)
    assert best is not None and best.number == 2
    best = best_trial(Study(space, direction="maximize"), history)
    assert best is not None and best.number == 0
    assert best_trial(Study(space), history[1:2]) is None


def test_study_from_an_optimization_job() -> None:
    job = parse(
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "OptimizationJob",
            "metadata": {
                "name": "t",
                "annotations": {
                    "optimization.trainer.kubeflow.org/algorithm": "tpe",
                    "optimization.trainer.kubeflow.org/early-stopping": '{"rule": "median"}',
                },
            },
            "spec": {
                "objectives": [{"metric": "acc", "direction": "Maximize"}],
                "searchAlgorithm": {"random": {"seed": 3}},
                "parameters": [
                    {"name": "lr", "searchSpace": {"logUniform": {"min": "1e-4", "max": "0.1"}}},
                    {
                        "name": "n",
                        "searchSpace": {"uniform": {"min": "1", "max": "4", "type": "Int"}},
                    },
                    {"name": "opt", "searchSpace": {"categorical": {"choices": ["sgd", "adam"]}}},
                ],
                "trainJobTemplate": {"spec": {"runtimeRef": {"name": "torch-distributed"}}},
            },
        }
    )
    assert isinstance(job, OptimizationJob)
    study = study_from_job(apply_defaults(job))
    assert study.space == {
        "lr": Range(1e-4, 0.1, log=True),
        "n": Range(1, 4, integer=True),
        "opt": Choice(("sgd", "adam")),
    }
    assert (study.algorithm, study.direction, study.seed) == ("tpe", "maximize", 3)
    assert study.early_stopping is not None and study.early_stopping.rule == "median"


def test_parameter_importance_finds_the_parameter_the_objective_depends_on() -> None:
    space = {"lr": Range(1e-4, 1e-1, log=True), "width": Range(1, 8, integer=True)}
    study = Study(space, seed=0)
    history = run(study, 30)
    importance = parameter_importance(study, history)
    assert set(importance) == {"lr", "width"}
    assert importance["lr"] > importance["width"]
    assert parameter_importance(study, history[:1]) == {}
    diverged = [dataclasses.replace(history[0], objective=math.nan), history[1]]
    assert parameter_importance(study, diverged) == {}


def test_parameter_importance_without_its_extra_says_which_to_install() -> None:
    # fANOVA imports scikit-learn, which only the importance extra declares.
    code = textwrap.dedent(
        """
        import importlib.abc, sys
        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] == "sklearn":
                    raise ImportError(f"{name} is not installed")
        sys.meta_path.insert(0, Block())
        from trainer_search import Range, Study, TrialRecord, parameter_importance
        study = Study({"x": Range(0.0, 1.0)})
        history = [TrialRecord(n, {"x": n / 10}, "complete", objective=n) for n in range(3)]
        parameter_importance(study, history)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 1
    wanted = 'parameter importance needs scikit-learn: pip install "trainer-search[importance]"'
    assert f"ImportError: {wanted}" in result.stderr
