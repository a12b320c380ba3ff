"""SDK arguments to an OptimizationJob of upstream's schema and back."""

from __future__ import annotations

import json

import pytest
from trainer_api import (
    ALGORITHM_ANNOTATION,
    EARLY_STOPPING_ANNOTATION,
    MAX_FAILED_TRIALS_ANNOTATION,
)
from trainer_sdk.optimizer import (
    GridSearch,
    Objective,
    RandomSearch,
    Search,
    SuccessiveHalving,
    TPESearch,
    TrialConfig,
)
from trainer_sdk.optimizer.spec import Definition, definition_of, optimization_job

TEMPLATE = {"spec": {"runtimeRef": {"name": "torch-distributed"}}}


def test_tpe_with_asha_round_trips_through_annotations() -> None:
    definition = Definition(
        {"lr": Search.loguniform(1e-4, 0.1), "batch": Search.choice([16, 32])},
        [Objective("accuracy", "maximize")],
        TPESearch(random_state=4),
        TrialConfig(num_trials=6, parallel_trials=2, max_failed_trials=1),
        SuccessiveHalving(reduction_factor=2),
    )
    job = optimization_job("tune", definition, TEMPLATE)
    document = job.to_dict()
    assert document["spec"]["searchAlgorithm"] == {"random": {"seed": 4}}
    assert document["spec"]["parameters"][0]["searchSpace"] == {
        "logUniform": {"min": "0.0001", "max": "0.1", "type": "Float"}
    }
    assert document["spec"]["parameters"][1]["searchSpace"] == {
        "categorical": {"choices": ["16", "32"]}
    }
    assert document["spec"]["objectives"] == [{"metric": "accuracy", "direction": "Maximize"}]
    annotations = document["metadata"]["annotations"]
    assert annotations[ALGORITHM_ANNOTATION] == "tpe"
    assert json.loads(annotations[EARLY_STOPPING_ANNOTATION]) == {
        "rule": "asha",
        "minResource": 1,
        "reductionFactor": 2,
    }
    assert annotations[MAX_FAILED_TRIALS_ANNOTATION] == "1"
    assert definition_of(job) == definition


def test_random_has_no_annotation_and_grid_refuses_ranges() -> None:
    plain = Definition(
        {"lr": Search.uniform(0.1, 0.2)}, [Objective()], RandomSearch(), TrialConfig(2), None
    )
    assert "annotations" not in optimization_job("plain", plain, TEMPLATE).to_dict()["metadata"]
    grid = Definition(
        {"lr": Search.uniform(0.1, 0.2)}, [Objective()], GridSearch(), TrialConfig(2), None
    )
    with pytest.raises(ValueError, match="Grid search requires all parameters to be Categorical"):
        optimization_job("grid", grid, TEMPLATE)


def test_bad_arguments_name_the_field() -> None:
    with pytest.raises(ValueError, match="parallel_trials <= num_trials"):
        TrialConfig(num_trials=2, parallel_trials=3)
    with pytest.raises(ValueError, match="loguniform needs min > 0"):
        Search.loguniform(0, 1)
    bad = Definition({"lr": 0.1}, [Objective()], RandomSearch(), TrialConfig(2), None)  # type: ignore[dict-item]
    with pytest.raises(ValueError, match=r"search_space\['lr'\]: expected Search.uniform\(\)"):
        optimization_job("bad", bad, TEMPLATE)


def test_parameters_sharing_an_env_variable_are_refused_naming_both() -> None:
    clash = Definition(
        {"lr": Search.uniform(0.1, 0.5), "LR": Search.uniform(1.0, 2.5)},
        [Objective()],
        RandomSearch(),
        TrialConfig(2),
        None,
    )
    with pytest.raises(
        ValueError, match=r"'LR' and 'lr' .* both reach the trial as KUBEFLOW_TRAINER_OPT_LR"
    ):
        optimization_job("clash", clash, TEMPLATE)
