"""The cache's Kubernetes objects for a TrainJob: names, wiring, ownership, bad arguments."""

from __future__ import annotations

import pytest
from data_cache_manifests import (
    ADMIN_TOKEN_ENV,
    TOKEN_ENV,
    ManifestArgumentError,
    cache_manifests,
    serve_args,
    token_secret_name,
    trainer_env,
)


def objects(**overrides: object) -> list[dict]:
    arguments = {
        "job_name": "mnist",
        "namespace": "team",
        "image": "repo/data-cache:0.1.0",
        "source": "s3://bucket/mnist",
        "num_nodes": 3,
        "token_secret": "mnist-cache-token",
        **overrides,
    }
    return cache_manifests(**arguments)  # type: ignore[arg-type]


def test_objects_are_two_services_and_two_statefulsets_named_after_the_job() -> None:
    kinds = [(o["kind"], o["metadata"]["name"], o["metadata"]["namespace"]) for o in objects()]
    assert kinds == [
        ("Service", "mnist-cache-nodes", "team"),
        ("StatefulSet", "mnist-cache-node", "team"),
        ("Service", "mnist-cache", "team"),
        ("StatefulSet", "mnist-cache-head", "team"),
    ]


def test_the_head_loads_the_source_onto_every_node_by_stable_dns_name() -> None:
    nodes_service, node_set, head_service, head_set = objects(replicas=2, dataset="train")
    assert nodes_service["spec"]["clusterIP"] == "None"
    assert (
        node_set["spec"]["replicas"] == 3 and node_set["spec"]["serviceName"] == "mnist-cache-nodes"
    )
    args = head_set["spec"]["template"]["spec"]["containers"][0]["args"]
    nodes = [args[i + 1] for i, a in enumerate(args) if a == "--node"]
    assert nodes == [
        f"grpc://mnist-cache-node-{i}.mnist-cache-nodes.team.svc:50052" for i in range(3)
    ]
    assert args[:4] == ["head", "s3://bucket/mnist", "--name", "train"]
    assert args[args.index("--replicas") + 1] == "2"
    assert head_service["spec"]["selector"] == head_set["spec"]["template"]["metadata"]["labels"]
    assert nodes_service["spec"]["selector"] == node_set["spec"]["selector"]["matchLabels"]


def secret_refs(env: list[dict]) -> dict[str, tuple[str, str]]:
    """Env names taken from a Secret, with the Secret's name and key."""
    return {
        entry["name"]: (ref["name"], ref["key"])
        for entry in env
        if (ref := (entry.get("valueFrom") or {}).get("secretKeyRef"))
    }


def test_head_and_nodes_take_both_tokens_from_the_secret_and_trainers_the_read_token() -> None:
    _, node_set, _, head_set = objects()
    for workload in (node_set, head_set):
        container = workload["spec"]["template"]["spec"]["containers"][0]
        assert secret_refs(container["env"]) == {
            TOKEN_ENV: ("mnist-cache-token", "token"),
            ADMIN_TOKEN_ENV: ("mnist-cache-token", "admin-token"),
        }
        assert "--load-root" not in container["args"]
        assert "--allow-anonymous-reads" not in container["args"]
    env = trainer_env("mnist", "team", "train", token_secret=token_secret_name("mnist"))
    assert secret_refs(env) == {TOKEN_ENV: ("mnist-cache-token", "token")}


def test_an_owner_uid_makes_the_trainjob_own_every_object() -> None:
    for document in objects(owner_uid="1234"):
        (owner,) = document["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
            "TrainJob",
            "mnist",
            "1234",
            True,
        )
    assert all("ownerReferences" not in d["metadata"] for d in objects())


def test_resources_and_service_account_reach_the_pods_they_name() -> None:
    node_resources = {"limits": {"cpu": "2", "memory": "2Gi"}}
    head_resources = {"limits": {"cpu": "1", "memory": "1Gi"}}
    _, node_set, _, head_set = objects(
        resources=node_resources, head_resources=head_resources, service_account="mnist-cache"
    )
    for workload, expected in ((node_set, node_resources), (head_set, head_resources)):
        pod = workload["spec"]["template"]["spec"]
        assert pod["serviceAccountName"] == "mnist-cache"
        assert pod["containers"][0]["resources"] == expected
    _, node_set, _, head_set = objects()
    for workload in (node_set, head_set):
        pod = workload["spec"]["template"]["spec"]
        assert "serviceAccountName" not in pod and "resources" not in pod["containers"][0]


def test_every_bad_argument_is_reported_at_once() -> None:
    with pytest.raises(ManifestArgumentError) as caught:
        objects(
            job_name="Bad_Name",
            namespace="",
            image="",
            source=[],
            num_nodes=0,
            memory_limit=0,
            token_secret="",
        )
    message = str(caught.value)
    fields = ("job_name", "namespace", "image", "source", "num_nodes", "memory_limit")
    for field in (*fields, "token_secret"):
        assert f"{field}:" in message


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        pytest.param({"job_name": "x" * 45}, "too long", id="long-name"),
        pytest.param({"replicas": 4}, "replicas", id="more-replicas-than-nodes"),
        pytest.param({"dataset": ""}, "dataset", id="empty-dataset"),
    ],
)
def test_bad_arguments_are_named(overrides: dict[str, object], message: str) -> None:
    with pytest.raises(ManifestArgumentError, match=message):
        objects(**overrides)


def test_serve_args_need_the_head_statefulset() -> None:
    with pytest.raises(ManifestArgumentError, match="no cache head StatefulSet"):
        serve_args(objects()[:2])
