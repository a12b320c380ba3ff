"""parse / parse_all / to_dict: kinds, round trips, strict and lenient modes, clear errors."""

from __future__ import annotations

from typing import Any

import pydantic
import pytest
import trainer_api
from trainer_api import FieldError, TrainJob, ValidationError, parse, parse_all

TRAIN_JOB = """
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: mnist
  creationTimestamp: "2026-01-02T03:04:05Z"
spec:
  runtimeRef:
    name: torch-distributed
  trainer:
    numNodes: 2
    env:
      - name: POD_NAME
        valueFrom:
          fieldRef:
            fieldPath: metadata.name
    resourcesPerNode:
      limits:
        cpu: "2500m"
        nvidia.com/gpu: 2
status:
  conditions:
    - type: Complete
      status: "True"
      reason: JobsCompleted
      message: done
      lastTransitionTime: "2026-01-02T03:05:00Z"
"""


def errors_of(doc: str | dict[str, Any], strict: bool = True) -> list[FieldError]:
    with pytest.raises(ValidationError) as caught:
        parse(doc, strict=strict)
    return caught.value.errors


def test_parse_returns_typed_train_job_with_snake_case_attributes() -> None:
    job = parse(TRAIN_JOB)
    assert isinstance(job, TrainJob)
    assert job.spec.trainer is not None
    assert job.spec.trainer.num_nodes == 2
    env = job.spec.trainer.env
    assert env is not None and env[0].value_from is not None
    assert env[0].value_from.field_ref is not None
    assert env[0].value_from.field_ref.field_path == "metadata.name"
    assert job.metadata.creation_timestamp is not None
    assert job.metadata.creation_timestamp.year == 2026


def test_to_dict_round_trips_wire_form_including_int_quantities_and_times() -> None:
    source = trainer_api._yaml.load_documents(TRAIN_JOB)[0]
    assert parse(TRAIN_JOB).to_dict() == source


def test_to_dict_of_constructed_object_writes_api_version_and_kind_only_once_set() -> None:
    job = TrainJob(
        metadata=trainer_api.ObjectMeta(name="a"),
        spec=trainer_api.TrainJobSpec(runtime_ref=trainer_api.RuntimeRef(name="torch")),
    )
    assert job.to_dict() == {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "a"},
        "spec": {"runtimeRef": {"name": "torch"}},
    }


def test_python_construction_rejects_misspelt_fields() -> None:
    with pytest.raises(pydantic.ValidationError) as caught:
        trainer_api.Trainer(num_node=2)  # type: ignore[call-arg]
    assert "Trainer has no field 'num_node'" in str(caught.value)
    kept = trainer_api.Trainer.model_validate(
        {"numNode": 2}, context=trainer_api.KEEP_UNKNOWN_FIELDS
    )
    assert kept.model_extra == {"numNode": 2}


def test_models_accept_snake_case_names_too() -> None:
    ref = trainer_api.RuntimeRef.model_validate({"name": "x", "api_group": "g"})
    assert ref.to_dict() == {"name": "x", "apiGroup": "g"}


@pytest.mark.parametrize(
    ("doc", "field", "fragment"),
    [
        pytest.param(
            {"kind": "Foo", "apiVersion": "v1"}, "kind", "unknown kind 'Foo'", id="unknown-kind"
        ),
        pytest.param({"apiVersion": "v1"}, "kind", "required", id="missing-kind"),
        pytest.param(
            {"kind": "TrainJob", "apiVersion": "kubeflow.org/v1"},
            "apiVersion",
            "'trainer.kubeflow.org/v1alpha1'",
            id="wrong-api-version",
        ),
        pytest.param(
            {"kind": "JobSet", "apiVersion": "jobset.x-k8s.io/v1alpha1"},
            "apiVersion",
            "'jobset.x-k8s.io/v1alpha2'",
            id="wrong-jobset-version",
        ),
        pytest.param(
            TRAIN_JOB.replace("numNodes: 2", "numNode: 2"),
            "spec.trainer.numNode",
            'did you mean "numNodes"',
            id="misspelt-field",
        ),
        pytest.param(
            TRAIN_JOB.replace("numNodes: 2", "numNodes: two"),
            "spec.trainer.numNodes",
            "valid integer",
            id="wrong-type",
        ),
        pytest.param(
            TRAIN_JOB.replace("numNodes: 2", 'numNodes: "2"'),
            "spec.trainer.numNodes",
            "valid integer",
            id="string-for-integer",
        ),
        pytest.param(
            TRAIN_JOB.replace('"2026-01-02T03:04:05Z"', "yesterday"),
            "metadata.creationTimestamp",
            "RFC 3339",
            id="bad-time",
        ),
        pytest.param(
            TRAIN_JOB.replace('cpu: "2500m"', "cpu: 0.5"),
            "spec.trainer.resourcesPerNode.limits.cpu",
            "Input should be a valid integer or a valid string (got 0.5)",
            id="float-quantity-one-error",
        ),
        pytest.param(
            TRAIN_JOB.replace("name: POD_NAME", "value: x"),
            "spec.trainer.env[0].name",
            "required",
            id="missing-required",
        ),
        pytest.param(
            TRAIN_JOB.replace('status: "True"', "status: Maybe"),
            "status.conditions[0].status",
            "'True'",
            id="bad-enum",
        ),
    ],
)
def test_bad_input_names_the_field(doc: str | dict[str, Any], field: str, fragment: str) -> None:
    errors = errors_of(doc)
    assert [error.field for error in errors] == [field]
    assert fragment in errors[0].message


def test_strict_reports_every_unknown_field_at_once() -> None:
    doc = TRAIN_JOB.replace("numNodes: 2", "numNode: 2\n    imag: x")
    assert [error.field for error in errors_of(doc)] == [
        "spec.trainer.numNode",
        "spec.trainer.imag",
    ]


def test_type_errors_and_unknown_fields_are_reported_together() -> None:
    doc = TRAIN_JOB.replace("numNodes: 2", "numNodes: two\n    imag: x").replace(
        "fieldPath:", "feildPath: x\n            fieldPath:"
    )
    assert [error.field for error in errors_of(doc)] == [
        "spec.trainer.numNodes",
        "spec.trainer.imag",
        "spec.trainer.env[0].valueFrom.fieldRef.feildPath",
    ]


def test_lenient_keeps_unknown_fields_and_writes_them_back() -> None:
    doc = TRAIN_JOB.replace("numNodes: 2", "numNodes: 2\n    futureField: {a: 1}")
    job = parse(doc, strict=False)
    assert job.to_dict()["spec"]["trainer"]["futureField"] == {"a": 1}


def test_parse_rejects_non_mapping_and_several_documents() -> None:
    assert "got list" in errors_of("- a\n- b")[0].message
    assert "one YAML document" in errors_of(TRAIN_JOB + "\n---\n" + TRAIN_JOB)[0].message


def test_parse_all_returns_objects_in_order_and_prefixes_errors_with_document_index() -> None:
    runtime = """
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata: {name: torch-distributed}
spec:
  mlPolicy: {numNodes: 1, torch: {}}
  template:
    spec:
      replicatedJobs:
        - name: node
          template:
            spec:
              template:
                spec:
                  containers: [{name: node, image: pytorch}]
"""
    objects = parse_all(runtime + "---\n" + TRAIN_JOB)
    assert [type(o).__name__ for o in objects] == ["ClusterTrainingRuntime", "TrainJob"]
    with pytest.raises(ValidationError) as caught:
        parse_all(runtime + "---\n" + TRAIN_JOB.replace("numNodes", "numNode"))
    assert [e.field for e in caught.value.errors] == ["[1].spec.trainer.numNode"]


@pytest.mark.parametrize(
    ("trainer", "spec", "field", "bound"),
    [
        pytest.param(
            {"numNodes": 10**12}, {}, "spec.trainer.numNodes", "2147483647", id="numNodes"
        ),
        pytest.param(
            {"numProcPerNode": 2**31}, {}, "spec.trainer.numProcPerNode", "2147483647", id="procs"
        ),
        pytest.param(
            {"numNodes": -(2**31) - 1}, {}, "spec.trainer.numNodes", "-2147483648", id="negative"
        ),
        pytest.param(
            {},
            {"activeDeadlineSeconds": 10**20},
            "spec.activeDeadlineSeconds",
            "9223372036854775807",
            id="int64",
        ),
    ],
)
def test_integers_are_bounded_to_their_api_types(
    trainer: dict[str, Any], spec: dict[str, Any], field: str, bound: str
) -> None:
    doc = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "a"},
        "spec": {"runtimeRef": {"name": "r"}, "trainer": trainer, **spec},
    }
    (error,) = errors_of(doc)
    assert error.field == field and bound in error.message


def test_int32_and_int64_limits_themselves_are_accepted() -> None:
    job = parse(
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": "a", "generation": 2**63 - 1},
            "spec": {"runtimeRef": {"name": "r"}, "trainer": {"numNodes": 2**31 - 1}},
        }
    )
    assert job.to_dict()["spec"]["trainer"]["numNodes"] == 2**31 - 1


def test_int_or_string_integers_are_int32() -> None:
    probe = {"tcpSocket": {"port": 2**31}}
    with pytest.raises(pydantic.ValidationError, match="2147483647"):
        trainer_api.Probe.model_validate(probe)
