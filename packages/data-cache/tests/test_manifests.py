"""The cache's Kubernetes objects run the CLI they name, and lead CacheDataset to the cache."""

from __future__ import annotations

import pytest
from trainer_data_cache import (
    DATASET_ENV,
    ENDPOINT_ENV,
    CacheDataset,
    InvalidArgumentError,
    cache_endpoint,
    cache_manifests,
    serve_args,
    trainer_env,
)
from trainer_data_cache.cli import main

IMAGE = "repo/data-cache:0.1.0"


def test_the_command_lines_parse_with_the_cli() -> None:
    objects = cache_manifests("mnist", "team", IMAGE, "s3://bucket/mnist", 3, memory_limit=1 << 30)
    _, node_set, _, head_set = objects
    for workload in (node_set, head_set):
        args = workload["spec"]["template"]["spec"]["containers"][0]["args"]
        command = main.get_command(None, args[0])  # type: ignore[arg-type]
        context = command.make_context(args[0], list(args[1:]))
        assert context.params["port"] in (50051, 50052)


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


def test_serve_args_run_the_same_cache_in_one_local_process() -> None:
    sources = ["a.parquet", "b.parquet"]
    objects = cache_manifests(
        "mnist", "team", IMAGE, sources, 3, dataset="train", replicas=2, memory_limit=64
    )
    args = serve_args(objects)
    assert args == [
        "serve", "a.parquet", "b.parquet", "--name", "train", "--nodes", "3", "--replicas", "2",
        "--memory-limit", "64",
    ]  # fmt: skip
    context = main.get_command(None, "serve").make_context("serve", args[1:])  # type: ignore[union-attr]
    assert context.params["paths"] == ("a.parquet", "b.parquet")
    assert (context.params["num_nodes"], context.params["memory_limit"]) == (3, 64)
