"""The cache's Kubernetes objects for a TrainJob, and the env that leads a trainer to it."""

from __future__ import annotations

import pytest
from data_cache import (
    DATASET_ENV,
    ENDPOINT_ENV,
    CacheDataset,
    InvalidArgumentError,
    cache_endpoint,
    cache_manifests,
    trainer_env,
)
from data_cache.cli import main


def objects(**overrides: object) -> list[dict]:
    arguments = {
        "job_name": "mnist",
        "namespace": "team",
        "image": "repo/data-cache:0.1.0",
        "source": "s3://bucket/mnist",
        "num_nodes": 3,
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


def test_the_command_lines_parse_with_the_cli() -> None:
    _, node_set, _, head_set = objects(memory_limit=1 << 30)
    for workload in (node_set, head_set):
        args = workload["spec"]["template"]["spec"]["containers"][0]["args"]
        command = main.get_command(None, args[0])  # type: ignore[arg-type]
        context = command.make_context(args[0], list(args[1:]))
        assert context.params["port"] in (50051, 50052)


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


def test_the_trainer_reads_the_endpoint_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    env = {entry["name"]: entry["value"] for entry in trainer_env("mnist", "team", "train")}
    assert env == {ENDPOINT_ENV: "grpc://mnist-cache.team.svc:50051", DATASET_ENV: "train"}
    assert cache_endpoint("mnist", "team") == env[ENDPOINT_ENV]
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    dataset = CacheDataset.from_env(batch_rows=4)
    assert (dataset.endpoint, dataset.request.dataset) == (env[ENDPOINT_ENV], "train")
    monkeypatch.delenv(ENDPOINT_ENV)
    with pytest.raises(InvalidArgumentError, match=f"{ENDPOINT_ENV}: not set"):
        CacheDataset.from_env()


def test_every_bad_argument_is_reported_at_once() -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        objects(job_name="Bad_Name", namespace="", image="", source=[], num_nodes=0, memory_limit=0)
    message = str(caught.value)
    for field in ("job_name", "namespace", "image", "source", "num_nodes", "memory_limit"):
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
    with pytest.raises(InvalidArgumentError, match=message):
        objects(**overrides)
