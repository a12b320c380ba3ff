"""validate: schema rules, transition (update) rules and the admission rules, all at once."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from trainer_api import (
    ClusterTrainingRuntime,
    JobSet,
    TrainingRuntime,
    TrainJob,
    ValidationError,
    apply_defaults,
    parse,
    validate,
)

Doc = dict[str, Any]


def pod(*containers: Doc) -> Doc:
    return {"spec": {"template": {"spec": {"containers": list(containers)}}}}


def step_job(name: str, step: str, *containers: Doc, **extra: Any) -> Doc:
    template = pod(*containers)
    template["metadata"] = {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": step}}
    return {"name": name, "template": template, **extra}


MOUNT = {"volumeMounts": [{"name": "initializer", "mountPath": "/workspace"}]}

RUNTIME: Doc = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "ClusterTrainingRuntime",
    "metadata": {"name": "torch-distributed"},
    "spec": {
        "mlPolicy": {"numNodes": 1, "torch": {}},
        "template": {
            "spec": {
                "replicatedJobs": [
                    step_job(
                        "dataset-initializer",
                        "dataset-initializer",
                        {"name": "dataset-initializer", **MOUNT},
                    ),
                    step_job("node", "trainer", {"name": "node", "image": "pytorch"}),
                ]
            }
        },
    },
}

TRAIN_JOB: Doc = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "TrainJob",
    "metadata": {"name": "mnist"},
    "spec": {
        "runtimeRef": {"name": "torch-distributed"},
        "trainer": {"numNodes": 2, "env": [{"name": "LR", "value": "0.1"}]},
    },
}


def edited(doc: Doc, edit: Callable[[Doc], object]) -> Doc:
    result = copy.deepcopy(doc)
    edit(result)
    return result


def job_of(doc: Doc) -> TrainJob:
    job = apply_defaults(parse(doc))
    assert isinstance(job, TrainJob)
    return job


def runtime_of(doc: Doc) -> ClusterTrainingRuntime | TrainingRuntime:
    runtime = apply_defaults(parse(doc))
    assert isinstance(runtime, (ClusterTrainingRuntime, TrainingRuntime))
    return runtime


def fields(errors: list[Any]) -> list[str]:
    return [error.field for error in errors]


def test_valid_objects_have_no_errors() -> None:
    runtime = runtime_of(RUNTIME)
    assert validate(runtime) == []
    assert validate(job_of(TRAIN_JOB), runtime=runtime) == []


def spec(doc: Doc) -> Doc:
    result: Doc = doc["spec"]
    return result


def trainer(doc: Doc) -> Doc:
    result: Doc = doc["spec"]["trainer"]
    return result


@pytest.mark.parametrize(
    ("edit", "field", "fragment"),
    [
        pytest.param(
            lambda d: d["metadata"].update(name="1-bad"),
            "metadata.name",
            "RFC 1035",
            id="name-not-rfc1035",
        ),
        pytest.param(
            lambda d: d["metadata"].update(name="a" * 64),
            "metadata.name",
            "no more than 63",
            id="name-too-long",
        ),
        pytest.param(
            lambda d: trainer(d).update(numNodes=-1),
            "spec.trainer.numNodes",
            "greater than or equal to 0",
            id="negative-num-nodes",
        ),
        pytest.param(
            lambda d: trainer(d).update(numProcPerNode=0),
            "spec.trainer.numProcPerNode",
            "numProcPerNode must be greater than or equal to 1",
            id="num-proc-per-node-zero",
        ),
        pytest.param(
            lambda d: spec(d).update(activeDeadlineSeconds=0),
            "spec.activeDeadlineSeconds",
            "greater than or equal to 1",
            id="active-deadline-zero",
        ),
        pytest.param(
            lambda d: spec(d).update(managedBy="me.io/controller"),
            "spec.managedBy",
            "ManagedBy must be",
            id="managed-by-unknown",
        ),
        pytest.param(
            lambda d: spec(d).update(initializer={"dataset": {"storageUri": "tatsu-lab/alpaca"}}),
            "spec.initializer.dataset.storageUri",
            "scheme://",
            id="storage-uri-without-scheme",
        ),
        pytest.param(
            lambda d: trainer(d)["env"].append({"name": "LR", "value": "1"}),
            "spec.trainer.env[1]",
            "duplicate entry (name='LR')",
            id="duplicate-env",
        ),
        pytest.param(
            lambda d: trainer(d).update(resourcesPerNode={"limits": {"cpu": "two"}}),
            "spec.trainer.resourcesPerNode.limits.cpu",
            "invalid quantity",
            id="bad-quantity",
        ),
        pytest.param(
            lambda d: trainer(d).update(env=[{"name": f"E{i}"} for i in range(129)]),
            "spec.trainer.env",
            "at most 128 items",
            id="too-many-env",
        ),
        pytest.param(
            lambda d: spec(d).update(runtimePatches=[{"manager": "no-domain"}]),
            "spec.runtimePatches[0].manager",
            "domain-prefixed path",
            id="manager-not-domain-prefixed",
        ),
        pytest.param(
            lambda d: trainer(d)["env"].append({"name": "PET_NNODES", "value": "3"}),
            "spec.trainer.env[1].name",
            "PET_NNODES is reserved",
            id="reserved-torch-env",
        ),
        pytest.param(
            lambda d: spec(d).update(runtimeRef={"name": "other"}),
            "spec.runtimeRef",
            "refers to ClusterTrainingRuntime 'other'",
            id="runtime-ref-mismatch",
        ),
    ],
)
def test_train_job_rule_is_reported_at_its_field(
    edit: Callable[[Doc], object], field: str, fragment: str
) -> None:
    errors = validate(job_of(edited(TRAIN_JOB, edit)), runtime=runtime_of(RUNTIME))
    assert fields(errors) == [field]
    assert fragment in errors[0].message


def patch(*replicated_jobs: Doc, manager: str = "example.io/team") -> Doc:
    return {
        "manager": manager,
        "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": list(replicated_jobs)}}},
    }


def pod_patch(name: str, **pod_spec: Any) -> Doc:
    return {"name": name, "template": {"spec": {"template": {"spec": pod_spec}}}}


PATCH_PATH = "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0]"


@pytest.mark.parametrize(
    ("runtime_patch", "field", "fragment"),
    [
        pytest.param(
            patch(pod_patch("launcher", serviceAccountName="sa")),
            f"{PATCH_PATH}.name",
            "'launcher' does not exist",
            id="unknown-replicated-job",
        ),
        pytest.param(
            patch(pod_patch("node", containers=[{"name": "sidecar"}])),
            f"{PATCH_PATH}.template.spec.template.spec.containers[0].name",
            "'sidecar' does not exist",
            id="unknown-container",
        ),
        pytest.param(
            patch(pod_patch("node", containers=[{"name": "node", "env": [{"name": "A"}]}])),
            f"{PATCH_PATH}.template.spec.template.spec.containers[0].env",
            "env must not be patched",
            id="env-on-node",
        ),
        pytest.param(
            patch(
                pod_patch(
                    "dataset-initializer",
                    containers=[{"name": "dataset-initializer", "env": [{"name": "A"}]}],
                )
            ),
            f"{PATCH_PATH}.template.spec.template.spec.containers[0].env",
            "env must not be patched",
            id="env-on-initializer",
        ),
    ],
)
def test_runtime_patch_rules(runtime_patch: Doc, field: str, fragment: str) -> None:
    job = edited(TRAIN_JOB, lambda d: spec(d).update(runtimePatches=[runtime_patch]))
    errors = validate(job_of(job), runtime=runtime_of(RUNTIME))
    assert fields(errors) == [field]
    assert fragment in errors[0].message


def test_patches_that_target_existing_jobs_and_containers_are_valid() -> None:
    runtime_patch = patch(
        pod_patch(
            "node",
            serviceAccountName="sa",
            containers=[{"name": "node", "volumeMounts": [{"name": "v", "mountPath": "/v"}]}],
        )
    )
    job = edited(TRAIN_JOB, lambda d: spec(d).update(runtimePatches=[runtime_patch]))
    assert validate(job_of(job), runtime=runtime_of(RUNTIME)) == []


def test_all_errors_are_reported_together() -> None:
    def break_three(doc: Doc) -> None:
        doc["metadata"]["name"] = "Bad"
        trainer(doc).update(numNodes=-1, numProcPerNode=0)

    errors = validate(job_of(edited(TRAIN_JOB, break_three)))
    assert sorted(fields(errors)) == [
        "metadata.name",
        "spec.trainer.numNodes",
        "spec.trainer.numProcPerNode",
    ]


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        pytest.param(
            lambda d: spec(d).update(runtimeRef={"name": "x"}), "spec.runtimeRef", id="runtimeRef"
        ),
        pytest.param(lambda d: trainer(d).update(numNodes=3), "spec.trainer", id="trainer"),
        pytest.param(
            lambda d: spec(d).update(initializer={"model": {"storageUri": "hf://b"}}),
            "spec.initializer",
            id="initializer",
        ),
        pytest.param(
            lambda d: spec(d).update(activeDeadlineSeconds=20),
            "spec.activeDeadlineSeconds",
            id="activeDeadlineSeconds",
        ),
        pytest.param(
            lambda d: spec(d).update(managedBy="kueue.x-k8s.io/multikueue"),
            "spec.managedBy",
            id="managedBy",
        ),
    ],
)
def test_immutable_fields_cannot_change_on_update(
    edit: Callable[[Doc], object], field: str
) -> None:
    base = edited(
        TRAIN_JOB,
        lambda d: spec(d).update(
            activeDeadlineSeconds=10, initializer={"model": {"storageUri": "hf://a"}}
        ),
    )
    old = job_of(base)
    errors = validate(job_of(edited(base, edit)), old=old)
    assert [(e.field, e.message) for e in errors] == [(field, "field is immutable")]
    assert validate(old, old=old) == []


def test_setting_an_unset_immutable_field_is_allowed_as_in_cel_transition_rules() -> None:
    old = job_of(TRAIN_JOB)
    new = job_of(edited(TRAIN_JOB, lambda d: spec(d).update(activeDeadlineSeconds=5)))
    assert validate(new, old=old) == []


@pytest.mark.parametrize(
    ("suspended_before", "suspended_after", "allowed"),
    [
        pytest.param(False, False, False, id="running-throughout-refused"),
        pytest.param(True, True, True, id="suspended-throughout"),
        pytest.param(False, True, True, id="suspended-in-the-same-update-as-kueue-does"),
        pytest.param(True, False, True, id="resumed-in-the-same-update"),
    ],
)
def test_runtime_patches_change_when_suspended_before_or_after(
    suspended_before: bool, suspended_after: bool, allowed: bool
) -> None:
    def with_patch(suspend: bool, account: str) -> Doc:
        runtime_patch = patch(
            {"name": "node", "template": {"metadata": {"labels": {"team": account}}}}
        )
        return edited(
            TRAIN_JOB, lambda d: spec(d).update(suspend=suspend, runtimePatches=[runtime_patch])
        )

    errors = validate(
        job_of(with_patch(suspended_after, "b")), old=job_of(with_patch(suspended_before, "a"))
    )
    expected = [] if allowed else [("spec.runtimePatches", True)]
    assert [(e.field, "suspended" in e.message) for e in errors] == expected


def test_pod_level_patch_fields_are_immutable_per_manager_and_job() -> None:
    def with_account(account: str) -> Doc:
        runtime_patch = patch(pod_patch("node", serviceAccountName=account))
        return edited(
            TRAIN_JOB, lambda d: spec(d).update(suspend=True, runtimePatches=[runtime_patch])
        )

    errors = validate(job_of(with_account("b")), old=job_of(with_account("a")))
    assert fields(errors) == [f"{PATCH_PATH}.template.spec.template.spec.serviceAccountName"]


def _dataset_container(doc: Doc) -> Doc:
    container: Doc = spec(doc)["template"]["spec"]["replicatedJobs"][0]["template"]["spec"][
        "template"
    ]["spec"]["containers"][0]
    return container


@pytest.mark.parametrize(
    ("initializer", "runtime_edit", "expected"),
    [
        pytest.param(
            {"model": {}},
            lambda d: None,
            [
                (
                    "spec.runtimeRef",
                    "must have model-initializer job when trainJob is configured with input "
                    "modelConfig",
                ),
                (
                    "spec.initializer.model",
                    "runtime 'torch-distributed': has no model-initializer replicated job",
                ),
            ],
            id="no-model-initializer-job",
        ),
        pytest.param(
            {"dataset": {}},
            lambda d: _dataset_container(d).update(name="other"),
            [
                (
                    "spec.runtimeRef",
                    "must have container with name - dataset-initializer in the "
                    "dataset-initializer job",
                ),
                (
                    "spec.initializer.dataset",
                    "runtime 'torch-distributed': the dataset-initializer job has no "
                    "'dataset-initializer' container",
                ),
            ],
            id="no-dataset-initializer-container",
        ),
        pytest.param(
            {"dataset": {}},
            lambda d: _dataset_container(d).pop("volumeMounts"),
            [
                (
                    "spec.runtimeRef",
                    "must have volumeMount with name - initializer in container "
                    "dataset-initializer of the dataset-initializer job",
                ),
                (
                    "spec.initializer.dataset",
                    "runtime 'torch-distributed': the 'dataset-initializer' container must "
                    "mount the 'initializer' volume (volumeMounts)",
                ),
            ],
            id="dataset-initializer-unmounted",
        ),
        pytest.param({"dataset": {}}, lambda d: None, [], id="dataset-initializer-ready"),
    ],
)
def test_initializer_needs_job_container_and_volume_mount_in_runtime(
    initializer: Doc, runtime_edit: Callable[[Doc], object], expected: list[tuple[str, str]]
) -> None:
    job = job_of(edited(TRAIN_JOB, lambda d: spec(d).update(initializer=initializer)))
    errors = validate(job, runtime=runtime_of(edited(RUNTIME, runtime_edit)))
    assert [(e.field, e.message) for e in errors] == expected


@pytest.mark.parametrize(
    ("edit", "field", "fragment"),
    [
        pytest.param(
            lambda d: spec(d)["mlPolicy"].update(mpi={}),
            "spec.mlPolicy",
            "Only one of the policy",
            id="two-policies",
        ),
        pytest.param(
            lambda d: spec(d)["mlPolicy"].update(torch=None, mpi={"numProcPerNode": 0}),
            "spec.mlPolicy.mpi.numProcPerNode",
            "mpiPolicy must be >= 1",
            id="mpi-num-proc",
        ),
        pytest.param(
            lambda d: spec(d)["mlPolicy"].update(torch=None, flux={"numProcPerNode": 0}),
            "spec.mlPolicy.flux.numProcPerNode",
            "fluxPolicy must be >= 1",
            id="flux-num-proc",
        ),
        pytest.param(
            lambda d: spec(d)["mlPolicy"].update(
                torch={
                    "envInjection": {"targets": [{"jobName": "node", "containerNames": ["node"]}]}
                }
            ),
            "spec.mlPolicy.torch.envInjection.targets[0].containerNames",
            "must not include the main node container",
            id="env-injection-node",
        ),
        pytest.param(
            lambda d: spec(d)["template"]["spec"]["replicatedJobs"][0].update(replicas=2),
            "spec.template.spec.replicatedJobs[0].replicas",
            "replicas 1",
            id="initializer-replicas",
        ),
        pytest.param(
            lambda d: spec(d)["template"]["spec"]["replicatedJobs"][1].update(replicas=2),
            "spec.template.spec.replicatedJobs[1].replicas",
            "the trainer replicated job must have replicas 1 (got 2)",
            id="trainer-replicas",
        ),
        pytest.param(
            lambda d: spec(d)["template"]["spec"]["replicatedJobs"][0].update(
                replicas=3,
                template={
                    "metadata": {
                        "labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}
                    },
                    "spec": {"template": {"spec": {"containers": [{"name": "node"}]}}},
                },
            ),
            "spec.template.spec.replicatedJobs[0].replicas",
            "the trainer replicated job must have replicas 1 (got 3)",
            id="label-decides-the-trainer-over-the-name",
        ),
        pytest.param(
            lambda d: spec(d)["template"]["spec"]["replicatedJobs"][1]["template"]["spec"][
                "template"
            ]["spec"]["containers"][0].update(name="trainer"),
            "spec.template.spec.replicatedJobs[1].template.spec.template.spec.containers",
            'container named "node"',
            id="trainer-without-node-container",
        ),
        pytest.param(
            lambda d: (
                spec(d)["template"]["spec"].update(startupPolicy={"startupPolicyOrder": "InOrder"})
                or spec(d)["template"]["spec"]["replicatedJobs"][1].update(
                    dependsOn=[{"name": "dataset-initializer", "status": "Complete"}]
                )
            ),
            "spec.template.spec",
            "mutually exclusive",
            id="startup-policy-with-depends-on",
        ),
        pytest.param(
            lambda d: spec(d).update(template={}),
            "spec.template",
            "at least 1 field",
            id="empty-template",
        ),
        pytest.param(
            lambda d: spec(d)["template"]["spec"].update(
                volumeClaimPolicies=[{"templates": [{"metadata": {"name": "w", "namespace": "x"}}]}]
            ),
            "spec.template.spec.volumeClaimPolicies[0]",
            "namespace cannot be set",
            id="claim-template-namespace",
        ),
    ],
)
def test_runtime_rule_is_reported_at_its_field(
    edit: Callable[[Doc], object], field: str, fragment: str
) -> None:
    def apply(doc: Doc) -> None:
        edit(doc)
        policy = spec(doc)["mlPolicy"]
        for name in [key for key, value in policy.items() if value is None]:
            del policy[name]

    errors = validate(runtime_of(edited(RUNTIME, apply)))
    assert fields(errors) == [field]
    assert fragment in errors[0].message


@pytest.mark.parametrize("ancestor", [None, "unknown-step"])
def test_initializer_named_jobs_without_a_known_ancestor_may_have_replicas(
    ancestor: str | None,
) -> None:
    """Upstream's "valid replicatedJobs with unknown user-specified ancestor"."""

    def apply(doc: Doc) -> None:
        for job in spec(doc)["template"]["spec"]["replicatedJobs"]:
            if job["name"] != "dataset-initializer":
                continue
            job["replicas"] = 2
            labels = job["template"]["metadata"]["labels"]
            del labels["trainer.kubeflow.org/trainjob-ancestor-step"]
            if ancestor is not None:
                labels["trainer.kubeflow.org/trainjob-ancestor-step"] = ancestor

    assert validate(runtime_of(edited(RUNTIME, apply))) == []


def test_jobset_immutable_policies_on_update() -> None:
    def jobset(operator: str) -> JobSet:
        obj = parse(
            {
                "apiVersion": "jobset.x-k8s.io/v1alpha2",
                "kind": "JobSet",
                "metadata": {"name": "j"},
                "spec": {"successPolicy": {"operator": operator}, "replicatedJobs": []},
            }
        )
        assert isinstance(obj, JobSet)
        return obj

    errors = validate(jobset("Any"), old=jobset("All"))
    assert [(e.field, e.message) for e in errors] == [("spec.successPolicy", "Value is immutable")]


def test_old_of_another_kind_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="old must be a TrainJob"):
        validate(job_of(TRAIN_JOB), old=runtime_of(RUNTIME))


def test_validation_error_carries_the_list() -> None:
    errors = validate(job_of(edited(TRAIN_JOB, lambda d: d["metadata"].update(name="X"))))
    raised = ValidationError(errors)
    assert raised.errors == errors
    assert str(raised).startswith("metadata.name: ")


def test_named_ports_are_not_quantities_but_sizes_are() -> None:
    probe = {"httpGet": {"port": "http", "path": "/healthz"}}
    runtime = edited(
        RUNTIME,
        lambda d: spec(d)["template"]["spec"]["replicatedJobs"][1]["template"]["spec"]["template"][
            "spec"
        ].update(
            containers=[{"name": "node", "livenessProbe": probe}],
            volumes=[{"name": "scratch", "emptyDir": {"sizeLimit": "lots"}}],
        ),
    )
    errors = validate(runtime_of(runtime))
    assert fields(errors) == [
        "spec.template.spec.replicatedJobs[1].template.spec.template.spec.volumes[0].emptyDir.sizeLimit"
    ]


def test_lists_validate_each_item_with_its_index() -> None:
    bad = edited(TRAIN_JOB, lambda d: d["metadata"].update(name="Bad"))
    listed = parse(
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJobList",
            "items": [
                {
                    key: value
                    for key, value in TRAIN_JOB.items()
                    if key not in ("apiVersion", "kind")
                },
                bad,
            ],
        }
    )
    assert fields(validate(listed)) == ["items[1].metadata.name"]
