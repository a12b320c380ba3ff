"""The cache's Kubernetes objects run the CLI they name, and lead CacheDataset to the cache."""

from __future__ import annotations

import pytest
from trainer_data_cache import (
    DATASET_ENV,
    ENDPOINT_ENV,
    TOKEN_ENV,
    CacheDataset,
    InvalidArgumentError,
    cache_endpoint,
    cache_manifests,
    serve_args,
    token_secret_name,
    trainer_env,
)
from trainer_data_cache.cli import main

IMAGE = "repo/data-cache:0.1.0"
SECRET = token_secret_name("mnist")


def test_the_command_lines_parse_with_the_cli() -> None:
    objects = cache_manifests(
        "mnist", "team", IMAGE, "s3://bucket/mnist", 3, memory_limit=1 << 30, token_secret=SECRET
    )
    _, node_set, _, head_set = objects
    for workload in (node_set, head_set):
        args = workload["spec"]["template"]["spec"]["containers"][0]["args"]
        command = main.get_command(None, args[0])  # type: ignore[arg-type]
        context = command.make_context(args[0], list(args[1:]))
        assert context.params["port"] in (50051, 50052)
        assert context.params["host"] == "0.0.0.0"
        assert not context.params["allow_anonymous_reads"]


def test_the_trainer_reads_the_endpoint_and_token_from_env(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    entries = trainer_env("mnist", "team", "train", token_secret=SECRET)
    env = {entry["name"]: entry.get("value") for entry in entries}
    assert env == {
        ENDPOINT_ENV: "grpc://mnist-cache.team.svc:50051",
        DATASET_ENV: "train",
        TOKEN_ENV: None,  # from the Secret
    }
    assert cache_endpoint("mnist", "team") == env[ENDPOINT_ENV]
    monkeypatch.setenv(ENDPOINT_ENV, env[ENDPOINT_ENV])
    monkeypatch.setenv(DATASET_ENV, "train")
    monkeypatch.setenv(TOKEN_ENV, "from-the-secret")
    dataset = CacheDataset.from_env(batch_rows=4)
    assert (dataset.endpoint, dataset.request.dataset) == (env[ENDPOINT_ENV], "train")
    assert dataset.connect.token == "from-the-secret"
    assert CacheDataset.from_env(token="given").connect.token == "given"
    monkeypatch.delenv(TOKEN_ENV)
    assert CacheDataset.from_env().connect.token is None
    monkeypatch.delenv(ENDPOINT_ENV)
    with pytest.raises(InvalidArgumentError, match=f"{ENDPOINT_ENV}: not set"):
        CacheDataset.from_env()


def test_serve_args_run_the_same_cache_in_one_local_process() -> None:
    sources = ["a.parquet", "b.parquet"]
    objects = cache_manifests(
        "mnist",
        "team",
        IMAGE,
        sources,
        3,
        dataset="train",
        replicas=2,
        memory_limit=64,
        token_secret=SECRET,
    )
    args = serve_args(objects)
    assert args == [
        "serve", "a.parquet", "b.parquet", "--name", "train", "--nodes", "3", "--replicas", "2",
        "--memory-limit", "64",
    ]  # fmt: skip
    context = main.get_command(None, "serve").make_context("serve", args[1:])  # type: ignore[union-attr]
    assert context.params["paths"] == ("a.parquet", "b.parquet")
    assert (context.params["num_nodes"], context.params["memory_limit"]) == (3, 64)
