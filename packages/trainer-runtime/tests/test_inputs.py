"""The drivers' edge: manifest dicts parsed once into the models everything else takes."""

from __future__ import annotations

import pytest
import trainer_api
from runtime_cases import FIXED_SETTINGS, NOW, make_job, runtime_doc
from trainer_runtime import (
    InvalidTrainJobError,
    Observed,
    admit,
    build,
    builtin_runtimes,
    parse_runtime,
    parse_trainjob,
)


def _parsed_job(doc: dict) -> trainer_api.TrainJob:
    job = trainer_api.parse(doc)
    assert isinstance(job, trainer_api.TrainJob)
    return job


def test_a_manifest_is_parsed_keeping_unknown_fields() -> None:
    doc = make_job(numNodes=2)
    doc["spec"]["trainer"]["futureField"] = 1
    job = parse_trainjob(doc)
    assert job.spec.trainer is not None and job.spec.trainer.num_nodes == 2
    assert job.to_dict()["spec"]["trainer"]["futureField"] == 1


def test_manifests_parsed_at_the_edge_build_what_their_models_build() -> None:
    doc = make_job(numNodes=3, env=[{"name": "EPOCHS", "value": "2"}])
    from_docs = build(
        admit(parse_trainjob(doc), parse_runtime(runtime_doc("torch-distributed"))),
        Observed(),
        NOW,
        settings=FIXED_SETTINGS,
    )
    from_models = build(
        admit(_parsed_job(doc), builtin_runtimes()["torch-distributed"]),
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
        parse_trainjob(doc)
    assert str(raised.value.errors[0]).startswith(message)


def test_a_runtime_manifest_that_does_not_parse_gives_its_field_errors() -> None:
    runtime = runtime_doc("torch-distributed")
    runtime["spec"]["mlPolicy"]["numNodes"] = "many"
    with pytest.raises(InvalidTrainJobError) as raised:
        parse_runtime(runtime)
    errors = [str(error) for error in raised.value.errors]
    assert len(errors) == 1 and errors[0].startswith("spec.mlPolicy.numNodes: ")
