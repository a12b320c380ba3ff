"""validate: what the API server refuses in any object (metadata, env) though no schema says it."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from trainer_api import TrainJob, apply_defaults, parse, validate

Doc = dict[str, Any]

TRAIN_JOB: Doc = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "TrainJob",
    "metadata": {
        "name": "mnist",
        "namespace": "team-a",
        "labels": {"app.kubernetes.io/name": "mnist", "tier": ""},
        "annotations": {"example.com/owner": "ml team: any text"},
    },
    "spec": {
        "runtimeRef": {"name": "torch-distributed"},
        "trainer": {"env": [{"name": "my.var-1", "value": "0.1"}, {"name": "X Y", "value": ""}]},
    },
}


def errors(**metadata: Any) -> list[str]:
    doc = copy.deepcopy(TRAIN_JOB)
    env = metadata.pop("env", None)
    doc["metadata"].update(metadata)
    if env is not None:
        doc["spec"]["trainer"]["env"] = env
    job = apply_defaults(parse(doc))
    assert isinstance(job, TrainJob)
    return [str(error) for error in validate(job)]


def test_valid_metadata_and_env_pass() -> None:
    assert errors() == []


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        pytest.param({"namespace": "Bad_NS"}, "metadata.namespace: a namespace must", id="ns-case"),
        pytest.param({"namespace": "a" * 64}, "metadata.namespace:", id="ns-too-long"),
        pytest.param(
            {"labels": {"bad key!": "v"}},
            "metadata.labels.bad key!: invalid label key",
            id="label-key",
        ),
        pytest.param({"labels": {"Bad.Prefix/x": "v"}}, "the prefix must", id="label-prefix"),
        pytest.param(
            {"labels": {"a/b/c": "v"}}, "invalid label key 'a/b/c'", id="label-two-slashes"
        ),
        pytest.param({"labels": {"k": "-v"}}, "a label value must", id="label-value"),
        pytest.param({"labels": {"k": "v" * 64}}, "a label value must", id="label-value-long"),
        pytest.param({"annotations": {"": "v"}}, "invalid annotation key ''", id="annotation-key"),
        pytest.param(
            {"annotations": {"k": "v" * (256 * 1024)}},
            "metadata.annotations: may not be larger than 262144 bytes",
            id="annotations-size",
        ),
        pytest.param(
            {"env": [{"name": "", "value": "x"}]},
            "spec.trainer.env[0].name: an environment variable name",
            id="env-empty-name",
        ),
        pytest.param(
            {"env": [{"name": "1 bad=name", "value": "x"}]},
            "spec.trainer.env[0].name: an environment variable name",
            id="env-equals",
        ),
        pytest.param(
            {"env": [{"name": "TAB\tNAME"}]}, "spec.trainer.env[0].name:", id="env-control"
        ),
        pytest.param(
            {"env": [{"name": "A", "value": "x\x00y"}]},
            "spec.trainer.env[0].value: may not contain NUL characters",
            id="env-nul-value",
        ),
    ],
)
def test_api_server_refusals_are_errors_with_their_path(change: Doc, expected: str) -> None:
    found = errors(**change)
    assert any(expected in error for error in found), found


def test_embedded_templates_are_checked_too() -> None:
    runtime = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": "r"},
        "spec": {
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": "node",
                            "template": {
                                "metadata": {"labels": {"bad key": "v"}},
                                "spec": {
                                    "template": {
                                        "spec": {
                                            "containers": [
                                                {"name": "node", "env": [{"name": "=x"}]}
                                            ]
                                        }
                                    }
                                },
                            },
                        }
                    ]
                }
            }
        },
    }
    found = {error.field for error in validate(apply_defaults(parse(runtime)))}
    assert "spec.template.spec.replicatedJobs[0].template.metadata.labels.bad key" in found
    assert (
        "spec.template.spec.replicatedJobs[0].template.spec.template.spec.containers[0].env[0].name"
        in found
    )


def volume_errors(volume: Doc, mount: Doc) -> list[str]:
    doc = copy.deepcopy(TRAIN_JOB)
    pod = {"volumes": [volume], "containers": [{"name": "node", "volumeMounts": [mount]}]}
    job = {"name": "node", "template": {"spec": {"template": {"spec": pod}}}}
    doc["spec"]["runtimePatches"] = [
        {
            "manager": "example.com/tool",
            "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [job]}}},
        }
    ]
    job = apply_defaults(parse(doc))
    return [str(error) for error in validate(job)]


OVERRIDE = (
    "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0].template.spec"
    ".template.spec"
)


@pytest.mark.parametrize(
    ("volume", "mount", "expected"),
    [
        pytest.param(
            {"name": "../../../escaped", "emptyDir": {}},
            {"name": "../../../escaped", "mountPath": "/data"},
            f"{OVERRIDE}.volumes[0].name: a volume name must be a DNS-1123 label",
            id="volume-name-path",
        ),
        pytest.param(
            {"name": "Data", "emptyDir": {}},
            {"name": "Data", "mountPath": "/data"},
            f"{OVERRIDE}.volumes[0].name: a volume name must be",
            id="volume-name-case",
        ),
        pytest.param(
            {"name": "host", "hostPath": {"path": "/data/../etc"}},
            {"name": "host", "mountPath": "/data"},
            f"{OVERRIDE}.volumes[0].hostPath.path: must not contain '..'",
            id="host-path-backsteps",
        ),
        pytest.param(
            {"name": "data", "emptyDir": {}},
            {"name": "data", "mountPath": ""},
            f"{OVERRIDE}.containers[0].volumeMounts[0].mountPath: may not be empty",
            id="mount-path-empty",
        ),
        pytest.param(
            {"name": "data", "emptyDir": {}},
            {"name": "data", "mountPath": "/data", "subPath": "../other"},
            f"{OVERRIDE}.containers[0].volumeMounts[0].subPath: must be a relative path",
            id="sub-path-backsteps",
        ),
        pytest.param(
            {"name": "data", "emptyDir": {}},
            {"name": "data", "mountPath": "/data", "subPath": "/etc"},
            f"{OVERRIDE}.containers[0].volumeMounts[0].subPath: must be a relative path",
            id="sub-path-absolute",
        ),
        pytest.param(
            {"name": "data", "emptyDir": {}},
            {"name": "data", "mountPath": "/data", "subPathExpr": "$(POD)/../x"},
            f"{OVERRIDE}.containers[0].volumeMounts[0].subPathExpr: must be a relative path",
            id="sub-path-expr-backsteps",
        ),
    ],
)
def test_volumes_are_refused_where_kubernetes_refuses_them(
    volume: Doc, mount: Doc, expected: str
) -> None:
    assert any(error.startswith(expected) for error in volume_errors(volume, mount)), volume_errors(
        volume, mount
    )


def test_a_volume_kubernetes_accepts_passes() -> None:
    volume = {"name": "data-1", "persistentVolumeClaim": {"claimName": "ckpt"}}
    assert volume_errors(volume, {"name": "data-1", "mountPath": "/data", "subPath": "a/b"}) == []
