"""The entry points' inputs: trainer_api models, or manifest dicts parsed once into them."""

from __future__ import annotations

import pytest
import trainer_api
from runtime_cases import FIXED_SETTINGS, NOW, make_job, runtime_doc
from trainer_runtime import InvalidTrainJobError, Observed, build, builtin_runtimes, validate
from trainer_runtime.inputs import as_runtime, as_trainjob


def _parsed_job(doc: dict) -> trainer_api.TrainJob:
    job = trainer_api.parse(doc)
    assert isinstance(job, trainer_api.TrainJob)
    return job


def test_a_model_is_used_as_given() -> None:
    job = _parsed_job(make_job())
    runtime = builtin_runtimes()["torch-distributed"]
    assert as_trainjob(job) is job
    assert as_runtime(runtime) is runtime


def test_a_manifest_is_parsed_keeping_unknown_fields() -> None:
    doc = make_job(numNodes=2)
    doc["spec"]["trainer"]["futureField"] = 1
    job = as_trainjob(doc)
    assert job.spec.trainer is not None and job.spec.trainer.num_nodes == 2
    assert job.to_dict()["spec"]["trainer"]["futureField"] == 1


def test_models_and_manifests_build_the_same_objects() -> None:
    doc = make_job(numNodes=3, env=[{"name": "EPOCHS", "value": "2"}])
    from_docs = build(
        doc, runtime_doc("torch-distributed"), Observed(), NOW, settings=FIXED_SETTINGS
    )
    from_models = build(
        _parsed_job(doc),
        builtin_runtimes()["torch-distributed"],
        Observed(),
        NOW,
        settings=FIXED_SETTINGS,
    )
    assert from_docs.apply == from_models.apply != ()
    assert from_docs.status == from_models.status


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        pytest.param(
            make_job(numNodes="two"), "spec.trainer.numNodes: ", id="trainjob-field-of-wrong-type"
        ),
        pytest.param(runtime_doc("torch-distributed"), "kind: expected TrainJob", id="not-a-job"),
    ],
)
def test_a_trainjob_manifest_that_does_not_parse_is_a_field_error(doc: dict, message: str) -> None:
    with pytest.raises(InvalidTrainJobError) as raised:
        as_trainjob(doc)
    assert str(raised.value.errors[0]).startswith(message)


def test_validate_returns_a_runtime_manifests_parse_errors() -> None:
    runtime = runtime_doc("torch-distributed")
    runtime["spec"]["mlPolicy"]["numNodes"] = "many"
    errors = [str(error) for error in validate(make_job(), runtime)]
    assert len(errors) == 1 and errors[0].startswith("spec.mlPolicy.numNodes: ")
