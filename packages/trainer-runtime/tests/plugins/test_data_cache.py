"""DataCache plugin: a cache:// dataset initializer becomes the job's cache objects and env."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import pytest
import yaml
from runtime_cases import (
    FIXED_SETTINGS,
    NOW,
    build_of,
    by_kind,
    container_of,
    env_of,
    field_errors,
    jobset_schema_errors,
    make_job,
    render_of,
    runtime_doc,
    upstream_dir,
)
from trainer_runtime import BuildError, Observed

SOURCE = "s3://bucket/orders/metadata/00001.metadata.json"
UNSET = "<unset>"


def cache_job(name: str = "alpha", uri: str = "cache://sales/orders", **env: Any) -> dict:
    """A 2-node job on the cache runtime; ``env`` goes to the dataset initializer after
    ``METADATA_LOC`` (a value, a ``{"valueFrom": ...}``, or UNSET to leave it out)."""
    job = make_job(name, "torch-distributed-with-cache", numNodes=2, command=["torchrun", "t.py"])
    values: dict[str, Any] = {"METADATA_LOC": SOURCE, **env}
    initializer_env = [
        {"name": key, **(value if isinstance(value, dict) else {"value": value})}
        for key, value in values.items()
        if value != UNSET
    ]
    job["spec"]["initializer"] = {"dataset": {"storageUri": uri, "env": initializer_env}}
    return job


def objects_of(job: dict, runtime: dict | None = None) -> list[dict]:
    runtime = runtime or runtime_doc("torch-distributed-with-cache")
    return render_of(job, runtime, settings=FIXED_SETTINGS, snapshot=False)


def pod_spec(workload: dict) -> dict:
    return workload["spec"]["template"]["spec"]


def test_objects_are_owned_by_the_job_and_come_before_the_jobset() -> None:
    objects = objects_of(cache_job())
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        ("Secret", "alpha-cache-token"),
        ("Service", "alpha-cache-nodes"),
        ("StatefulSet", "alpha-cache-node"),
        ("Service", "alpha-cache"),
        ("StatefulSet", "alpha-cache-head"),
        ("JobSet", "alpha"),
    ]
    for document in objects:
        (owner,) = document["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["name"], owner["uid"]) == ("TrainJob", "alpha", "uid-alpha")
        assert document["metadata"]["namespace"] == "default"


def test_the_head_loads_the_source_as_the_table_onto_cluster_size_minus_one_nodes() -> None:
    objects = objects_of(cache_job(CLUSTER_SIZE="4"))
    node_set, head_set = by_kind(objects, "StatefulSet")
    assert node_set["spec"]["replicas"] == 3 and head_set["spec"]["replicas"] == 1
    (head,) = pod_spec(head_set)["containers"]
    assert head["image"] == "ghcr.io/trainer-platform/data-cache:latest"
    assert head["args"][:4] == ["head", SOURCE, "--name", "orders"]
    assert head["args"].count("--node") == 3


TOKEN_REF = {"secretKeyRef": {"name": "alpha-cache-token", "key": "token"}}
ADMIN_REF = {"secretKeyRef": {"name": "alpha-cache-token", "key": "admin-token"}}


def test_the_trainer_gets_the_endpoint_dataset_and_read_token_after_every_other_env() -> None:
    jobset = by_kind(objects_of(cache_job()), "JobSet")[0]
    env = env_of(container_of(jobset, "node"))
    assert list(env.items())[-3:] == [
        ("DATA_CACHE_ENDPOINT", "grpc://alpha-cache.default.svc:50051"),
        ("DATA_CACHE_DATASET", "orders"),
        ("DATA_CACHE_TOKEN", TOKEN_REF),
    ]
    assert "DATA_CACHE_ADMIN_TOKEN" not in env
    assert env["PET_NNODES"] == "2"


def test_the_token_secret_is_random_immutable_and_made_only_while_absent() -> None:
    tokens = iter(["read-1", "admin-1", "read-2", "admin-2"])
    settings = replace(FIXED_SETTINGS, cache_token=lambda: next(tokens))
    runtime = runtime_doc("torch-distributed-with-cache")
    plan = build_of(cache_job(), runtime, Observed(), NOW, settings=settings)
    (secret,) = [o for o in plan.apply if o["kind"] == "Secret"]
    assert secret["stringData"] == {"token": "read-1", "admin-token": "admin-1"}
    assert secret["immutable"] is True
    assert secret["metadata"]["ownerReferences"][0]["uid"] == "uid-alpha"
    again = build_of(cache_job(), runtime, Observed(objects=(secret,)), NOW, settings=settings)
    assert [o for o in again.apply if o["kind"] == "Secret"] == []
    assert next(tokens) == "read-2"  # not called for a Secret that exists


def test_head_and_nodes_hold_both_tokens_and_the_probe_the_read_token() -> None:
    objects = objects_of(cache_job())
    for workload in by_kind(objects, "StatefulSet"):
        env = env_of(pod_spec(workload)["containers"][0])
        assert (env["DATA_CACHE_TOKEN"], env["DATA_CACHE_ADMIN_TOKEN"]) == (TOKEN_REF, ADMIN_REF)
    initializer = container_of(
        by_kind(objects, "JobSet")[0], "dataset-initializer", "dataset-initializer"
    )
    assert env_of(initializer)["DATA_CACHE_TOKEN"] == TOKEN_REF
    assert "DATA_CACHE_ADMIN_TOKEN" not in env_of(initializer)


def test_the_initializer_step_waits_for_the_cache_with_the_cache_image_and_no_rights() -> None:
    jobset = by_kind(objects_of(cache_job()), "JobSet")[0]
    initializer = container_of(jobset, "dataset-initializer", "dataset-initializer")
    assert initializer["image"] == "ghcr.io/trainer-platform/data-cache:latest"
    assert [*initializer["command"], *initializer["args"]] == [
        "data-cache",
        "probe",
        "grpc://alpha-cache.default.svc:50051",
        "--wait",
        "1800",
    ]
    initializer_job, node_job = jobset["spec"]["replicatedJobs"]
    assert "serviceAccountName" not in initializer_job["template"]["spec"]["template"]["spec"]
    assert node_job["dependsOn"] == [{"name": "dataset-initializer", "status": "Complete"}]


@pytest.mark.parametrize(
    ("env", "node", "head"),
    [
        pytest.param({}, ("2", "2Gi"), ("1", "1Gi"), id="upstream-defaults"),
        pytest.param(
            {"WORKER_CPU": "500m", "WORKER_MEM": "8Gi", "HEAD_CPU": "3", "HEAD_MEM": "512Mi"},
            ("500m", "8Gi"),
            ("3", "512Mi"),
            id="job-overrides",
        ),
    ],
)
def test_cpu_and_memory_are_each_pods_requests_and_limits(
    env: dict[str, str], node: tuple[str, str], head: tuple[str, str]
) -> None:
    node_set, head_set = by_kind(objects_of(cache_job(**env)), "StatefulSet")
    for workload, (cpu, memory) in ((node_set, node), (head_set, head)):
        resources = pod_spec(workload)["containers"][0]["resources"]
        expected = {"cpu": cpu, "memory": memory}
        assert resources == {"requests": expected, "limits": expected}


def test_an_iam_role_makes_an_owned_service_account_both_pods_run_under() -> None:
    objects = objects_of(cache_job(IAM_ROLE="arn:aws:iam::1:role/cache"))
    (account,) = by_kind(objects, "ServiceAccount")
    assert account["metadata"]["name"] == "alpha-cache"
    assert account["metadata"]["annotations"]["eks.amazonaws.com/role-arn"] == (
        "arn:aws:iam::1:role/cache"
    )
    assert account["metadata"]["ownerReferences"][0]["uid"] == "uid-alpha"
    for workload in by_kind(objects, "StatefulSet"):
        assert pod_spec(workload)["serviceAccountName"] == "alpha-cache"
    plain = objects_of(cache_job())
    assert by_kind(plain, "ServiceAccount") == []
    assert all("serviceAccountName" not in pod_spec(w) for w in by_kind(plain, "StatefulSet"))


def test_a_suspended_job_keeps_its_cache_scaled_to_zero() -> None:
    job = cache_job()
    job["spec"]["suspend"] = True
    assert [w["spec"]["replicas"] for w in by_kind(objects_of(job), "StatefulSet")] == [0, 0]
    del job["spec"]["suspend"]
    assert [w["spec"]["replicas"] for w in by_kind(objects_of(job), "StatefulSet")] == [2, 1]


def test_another_storage_uri_leaves_the_runtime_as_it_is() -> None:
    job = cache_job(uri="s3://bucket/orders")
    objects = objects_of(job)
    assert [o["kind"] for o in objects] == ["JobSet"]
    initializer = container_of(objects[0], "dataset-initializer", "dataset-initializer")
    assert initializer["image"] == "ghcr.io/trainer-platform/dataset-initializer"
    assert "command" not in initializer
    assert "DATA_CACHE_ENDPOINT" not in env_of(container_of(objects[0], "node"))


def test_the_build_is_deterministic_and_every_jobset_valid() -> None:
    job = cache_job(IAM_ROLE="arn:aws:iam::1:role/cache")
    first = objects_of(copy.deepcopy(job))
    assert objects_of(copy.deepcopy(job)) == first
    if upstream_dir() is not None:
        assert jobset_schema_errors(by_kind(first, "JobSet")[0]) == []


@pytest.mark.parametrize(
    ("job", "message"),
    [
        pytest.param(
            cache_job(uri="cache://orders"),
            "spec.initializer.dataset.storageUri: expected cache://SCHEMA/TABLE, got "
            "'cache://orders'",
            id="uri-without-schema",
        ),
        pytest.param(
            cache_job(METADATA_LOC=UNSET),
            "spec.initializer.dataset.env: METADATA_LOC is required",
            id="no-source",
        ),
        pytest.param(
            cache_job(CLUSTER_SIZE="1"),
            "spec.initializer.dataset.env[1].value: CLUSTER_SIZE must be an integer >= 2",
            id="cluster-without-nodes",
        ),
        pytest.param(
            cache_job(CLUSTER_SIZE="three"),
            "spec.initializer.dataset.env[1].value: CLUSTER_SIZE must be an integer >= 2 (the "
            "head and at least one node), got 'three'",
            id="cluster-size-not-a-number",
        ),
        pytest.param(
            cache_job(HEAD_MEM="lots"),
            "spec.initializer.dataset.env[1].value: HEAD_MEM: invalid quantity 'lots'",
            id="bad-quantity",
        ),
        pytest.param(
            cache_job(IAM_ROLE={"valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}),
            "spec.initializer.dataset.env[1].value: IAM_ROLE must be a literal value",
            id="value-from",
        ),
    ],
)
def test_bad_cache_settings_are_field_errors(job: dict, message: str) -> None:
    errors = field_errors(job, runtime_doc("torch-distributed-with-cache"))
    assert any(error.startswith(message) for error in errors), errors


def test_trainer_env_the_cache_sets_is_reserved() -> None:
    job = cache_job()
    job["spec"]["trainer"]["env"] = [
        {"name": "DATA_CACHE_DATASET", "value": "other"},
        {"name": "DATA_CACHE_TOKEN", "value": "guessed"},
    ]
    assert field_errors(job, runtime_doc("torch-distributed-with-cache")) == [
        "spec.trainer.env[0].name: DATA_CACHE_DATASET is reserved for the data-cache runtime",
        "spec.trainer.env[1].name: DATA_CACHE_TOKEN is reserved for the data-cache runtime",
    ]


def test_a_runtime_without_a_cache_image_cannot_run_a_cache_uri() -> None:
    runtime = runtime_doc("torch-distributed-with-cache")
    initializer = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]
    container = initializer["template"]["spec"]["template"]["spec"]["containers"][0]
    container["env"] = [var for var in container["env"] if var["name"] != "CACHE_IMAGE"]
    assert field_errors(cache_job(), runtime) == [
        "spec.runtimeRef.name: ClusterTrainingRuntime 'torch-distributed-with-cache' has no "
        "CACHE_IMAGE in its dataset-initializer env, so it cannot run a cache:// dataset"
    ]


def test_a_name_too_long_for_the_cache_fails_the_build_with_the_reason() -> None:
    plan = build_of(
        cache_job(name="x" * 45),
        runtime_doc("torch-distributed-with-cache"),
        Observed(),
        NOW,
        settings=FIXED_SETTINGS,
    )
    (created,) = [c for c in plan.status.conditions if c.type == "Created"]
    assert (created.status, created.reason) == ("False", "JobsBuildFailed")
    assert "data cache: job_name:" in created.message and "too long" in created.message
    with pytest.raises(BuildError, match="data cache: job_name"):
        objects_of(cache_job(name="x" * 45))


@pytest.mark.skipif(upstream_dir() is None, reason="upstream reference data not found")
def test_upstreams_cache_runtime_runs_the_job_unchanged() -> None:
    path = upstream_dir() / "kubeflow-trainer/manifests/base/runtimes/data-cache"  # type: ignore[operator]
    runtime = yaml.safe_load((path / "torch_distributed_with_cache.yaml").read_text())
    objects = objects_of(cache_job(IAM_ROLE="arn:aws:iam::1:role/cache"), runtime)
    assert [o["kind"] for o in objects] == [
        "Secret",
        "ServiceAccount",
        "Service",
        "StatefulSet",
        "Service",
        "StatefulSet",
        "JobSet",
    ]
    node_set = by_kind(objects, "StatefulSet")[0]
    assert (
        pod_spec(node_set)["containers"][0]["image"] == "ghcr.io/kubeflow/trainer/data-cache:latest"
    )
    jobset = by_kind(objects, "JobSet")[0]
    assert env_of(container_of(jobset, "node"))["DATA_CACHE_DATASET"] == "orders"
    assert jobset_schema_errors(jobset) == []
