"""parse_review: anything that is not an AdmissionReview for the webhook's kind is refused."""

from __future__ import annotations

import json
from typing import Any

import pytest
from trainer_controller.operator.reviews import MAX_REVIEW_BYTES, BadReview, parse_review

JOB: dict[str, Any] = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "TrainJob",
    "metadata": {"name": "job", "namespace": "default"},
    "spec": {"runtimeRef": {"name": "torch-distributed"}},
}
RUNTIME: dict[str, Any] = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "ClusterTrainingRuntime",
    "metadata": {"name": "r"},
    "spec": {"template": {"spec": {}}},
}


def review(**request: Any) -> dict[str, Any]:
    fields = {"uid": "u-1", "operation": "CREATE", "namespace": "default", "object": JOB}
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {**fields, **request},
    }


def body(value: Any) -> bytes:
    return json.dumps(value).encode()


def test_a_well_formed_review_gives_its_request() -> None:
    request = parse_review(body(review()), "TrainJob")
    assert request["uid"] == "u-1" and request["object"] == JOB
    update = parse_review(body(review(operation="UPDATE", oldObject=JOB)), "TrainJob")
    assert update["oldObject"] == JOB
    assert parse_review(body(review(operation="DELETE", object=None, oldObject=JOB)), "TrainJob")


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        pytest.param(b"[1]", "got array", id="array"),
        pytest.param(b"null", "got null", id="null"),
        pytest.param(b"5", "got number", id="number"),
        pytest.param(b'"review"', "got string", id="string"),
        pytest.param(b"{", "not JSON", id="truncated"),
        pytest.param(b"\xff\xfe", "not JSON", id="not-utf8"),
        pytest.param(b"[" * 100_000 + b"]" * 100_000, "not JSON", id="deep-nesting"),
        pytest.param(body({"kind": "AdmissionReview"}), "apiVersion", id="no-api-version"),
        pytest.param(body({**review(), "request": [1]}), "request: expected an object", id="req"),
        pytest.param(body(review(uid=5)), "request.uid", id="uid-number"),
        pytest.param(body(review(uid="")), "request.uid", id="uid-empty"),
        pytest.param(b" " * (MAX_REVIEW_BYTES + 1), "at most 3145728 bytes", id="too-large"),
    ],
)
def test_unanswerable_bodies_are_refused_without_uid(raw: bytes, fragment: str) -> None:
    with pytest.raises(BadReview) as caught:
        parse_review(raw, "TrainJob")
    assert caught.value.uid is None and fragment in caught.value.message


@pytest.mark.parametrize(
    ("request_fields", "kind", "fragment"),
    [
        pytest.param({"operation": "PATCH"}, "TrainJob", "request.operation", id="operation"),
        pytest.param(
            {"object": None}, "TrainJob", "request.object: expected a TrainJob", id="null"
        ),
        pytest.param({"object": [1]}, "TrainJob", "got array", id="object-array"),
        pytest.param({"object": RUNTIME}, "TrainJob", "admits", id="runtime-to-trainjob-hook"),
        pytest.param({"object": JOB}, "ClusterTrainingRuntime", "admits", id="job-to-runtime-hook"),
        pytest.param(
            {"object": {**JOB, "apiVersion": "kubeflow.org/v1"}}, "TrainJob", "admits", id="version"
        ),
        pytest.param(
            {"object": {**JOB, "spec": "spec"}}, "TrainJob", "request.object: spec:", id="spec-str"
        ),
        pytest.param(
            {"object": {**JOB, "spec": {"runtimeRef": "torch"}}},
            "TrainJob",
            "request.object: spec.runtimeRef:",
            id="runtimeRef-string",
        ),
        pytest.param(
            {"operation": "UPDATE", "oldObject": []},
            "TrainJob",
            "request.oldObject: expected a TrainJob object, got array",
            id="update-old-array",
        ),
        pytest.param(
            {"operation": "UPDATE", "oldObject": None}, "TrainJob", "oldObject", id="update-no-old"
        ),
        pytest.param({"oldObject": JOB}, "TrainJob", "expected null on CREATE", id="create-old"),
        pytest.param({"namespace": 5}, "TrainJob", "request.namespace", id="namespace-number"),
    ],
)
def test_malformed_requests_with_a_uid_are_refused_with_it(
    request_fields: dict[str, Any], kind: str, fragment: str
) -> None:
    with pytest.raises(BadReview) as caught:
        parse_review(body(review(**request_fields)), kind)
    assert caught.value.uid == "u-1" and fragment in caught.value.message


def test_deep_objects_are_refused_as_trainer_api_bounds_them() -> None:
    deep: dict[str, Any] = {}
    inner = deep
    for _ in range(500):  # decodes; deeper than any API field by far
        inner["x"] = {}
        inner = inner["x"]
    with pytest.raises(BadReview, match="nested deeper than 100 levels"):
        parse_review(body(review(object={**JOB, "spec": deep})), "TrainJob")
