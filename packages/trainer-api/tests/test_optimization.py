"""OptimizationJob: upstream's schema rules, defaulting, update rules and the extension
annotations."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from trainer_api import (
    ALGORITHM_ANNOTATION,
    EARLY_STOPPING_ANNOTATION,
    MAX_FAILED_TRIALS_ANNOTATION,
    OptimizationJob,
    apply_defaults,
    early_stopping,
    max_failed_trials,
    parameter_env_name,
    parse,
    search_algorithm,
    validate,
)
from trainer_api.crds import crd_manifests

CRD = "trainer.kubeflow.org_optimizationjobs.yaml"


def manifest(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "objectives": [{"metric": "loss"}],
        "parameters": [
            {"name": "lr", "searchSpace": {"logUniform": {"min": "0.0001", "max": "0.1"}}},
            {"name": "batch", "searchSpace": {"categorical": {"choices": ["16", "32"]}}},
        ],
        "numTrials": 6,
        "parallelTrials": 2,
        "trainJobTemplate": {"spec": {"runtimeRef": {"name": "torch-distributed"}}},
    }
    body.update(spec)
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "OptimizationJob",
        "metadata": {"name": "tune"},
        "spec": body,
    }


def errors_of(document: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
    job = apply_defaults(parse(document))
    previous = apply_defaults(parse(old)) if old is not None else None
    return [str(error) for error in validate(job, old=previous)]


def test_a_valid_job_parses_defaults_and_round_trips() -> None:
    document = manifest()
    job = parse(document)
    assert isinstance(job, OptimizationJob)
    assert job.to_dict() == document
    defaulted = apply_defaults(job)
    assert defaulted.spec.search_algorithm is not None
    assert defaulted.spec.search_algorithm.random is not None
    assert defaulted.spec.objectives[0].direction == "Minimize"
    lr = defaulted.spec.parameters[0].search_space.log_uniform
    assert lr is not None and lr.type == "Float"
    assert defaulted.to_dict()["spec"]["searchAlgorithm"] == {"random": {}}
    assert errors_of(document) == []


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"parallelTrials": 7}, "spec: parallelTrials cannot exceed numTrials"),
        (
            {"searchAlgorithm": {"grid": {}}},
            "spec: Grid search requires all parameters to be Categorical",
        ),
        ({"objectives": [{"metric": "loss"}, {"metric": "acc"}]}, "spec.objectives: "),
        ({"numTrials": 101}, "spec.numTrials: "),
        (
            {
                "parameters": [
                    {"name": "lr", "searchSpace": {"logUniform": {"min": "0", "max": "1"}}}
                ]
            },
            "spec.parameters[0].searchSpace.logUniform: min must be strictly greater than 0",
        ),
        (
            {
                "parameters": [
                    {"name": "lr", "searchSpace": {"uniform": {"min": "1", "max": "0.5"}}}
                ]
            },
            "spec.parameters[0].searchSpace.uniform: min must be strictly less than max",
        ),
        (
            {"parameters": [{"name": "lr", "searchSpace": {"uniform": {"min": "x", "max": "1"}}}]},
            "spec.parameters[0].searchSpace.uniform.min: ",
        ),
        (
            {"parameters": [{"name": "lr", "searchSpace": {}}]},
            "spec.parameters[0].searchSpace: exactly one of the fields in [uniform logUniform",
        ),
        (
            {
                "trainJobTemplate": {
                    "metadata": {"name": "fixed"},
                    "spec": {"runtimeRef": {"name": "torch-distributed"}},
                }
            },
            "spec.trainJobTemplate.metadata: name and namespace cannot be set in a template.",
        ),
    ],
)
def test_upstreams_rules_refuse(spec: dict[str, Any], expected: str) -> None:
    errors = errors_of(manifest(**spec))
    assert any(error.startswith(expected) for error in errors), errors


def test_the_spec_is_immutable() -> None:
    old = manifest()
    assert errors_of(manifest(numTrials=8), old=old) == [
        "spec: OptimizationJobSpec is immutable and cannot be updated after creation"
    ]
    assert errors_of(manifest(), old=old) == []


def test_our_crd_carries_every_rule_message_of_upstreams(upstream_dir: Path) -> None:
    path = upstream_dir / "kubeflow-trainer" / "manifests" / "base" / "crds" / CRD
    theirs = messages(yaml.safe_load(path.read_text()))
    ours = messages(crd_manifests()[CRD])
    assert theirs - ours == set()


def messages(schema: Any) -> set[str]:
    if isinstance(schema, dict):
        own = {
            " ".join(rule["message"].split()) for rule in schema.get("x-kubernetes-validations", [])
        }
        return own.union(*(messages(value) for value in schema.values()))
    if isinstance(schema, list):
        return set().union(*(messages(item) for item in schema))
    return set()


def with_annotations(**annotations: str) -> dict[str, Any]:
    document = manifest()
    document["metadata"]["annotations"] = annotations
    return document


def test_the_extension_annotations_are_read_and_checked() -> None:
    rule = json.dumps({"rule": "asha", "reductionFactor": 2})
    document = with_annotations(**{ALGORITHM_ANNOTATION: "tpe", EARLY_STOPPING_ANNOTATION: rule})
    job = parse(document)
    assert isinstance(job, OptimizationJob)
    assert search_algorithm(job) == "tpe"
    stopping = early_stopping(job)
    assert stopping is not None and (stopping.rule, stopping.reduction_factor) == ("asha", 2)
    assert errors_of(document) == []
    bad = with_annotations(
        **{
            ALGORITHM_ANNOTATION: "hyperband",
            EARLY_STOPPING_ANNOTATION: "{",
            MAX_FAILED_TRIALS_ANNOTATION: "-1",
        }
    )
    assert [error.split(": ")[0] for error in errors_of(bad)] == [
        f"metadata.annotations[{ALGORITHM_ANNOTATION}]",
        f"metadata.annotations[{EARLY_STOPPING_ANNOTATION}]",
        f"metadata.annotations[{MAX_FAILED_TRIALS_ANNOTATION}]",
    ]
    assert max_failed_trials(parse(with_annotations(**{MAX_FAILED_TRIALS_ANNOTATION: "2"}))) == 2


def test_grid_without_annotation_and_parameter_env_names() -> None:
    job = parse(manifest(searchAlgorithm={"grid": {}}))
    assert isinstance(job, OptimizationJob)
    assert search_algorithm(job) == "grid"
    assert early_stopping(job) is None
    assert parameter_env_name("learning-rate") == "KUBEFLOW_TRAINER_OPT_LEARNING_RATE"


@pytest.mark.parametrize(
    ("first", "second"),
    [
        pytest.param("lr", "LR", id="case"),
        pytest.param("l-r", "l_r", id="punctuation"),
        pytest.param("learning.rate", "LEARNING-RATE", id="both"),
    ],
)
def test_parameters_that_reach_a_trial_as_one_env_variable_are_refused_naming_both(
    first: str, second: str
) -> None:
    space = {"uniform": {"min": "0.1", "max": "1"}}
    document = manifest(
        parameters=[{"name": first, "searchSpace": space}, {"name": second, "searchSpace": space}]
    )
    env = parameter_env_name(first)
    assert errors_of(document) == [
        f"spec.parameters[1].name: {second!r} and {first!r} (spec.parameters[0]) both reach "
        f"the trial as {env}: rename one"
    ]
