"""The local stand-in for a job's cache: which plans have one, its process, its address."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from data_cache_manifests import cache_endpoint, cache_manifests, trainer_env
from trainer_sdk.backends.local.caches import (
    CacheStartError,
    cache_tokens,
    local_jobset,
    serve_command,
    start_cache,
)

SECRET = {
    "apiVersion": "v1",
    "kind": "Secret",
    "metadata": {"name": "rows-cache-token"},
    "stringData": {"token": "read-token"},
    "data": {"admin-token": "YWRtaW4tdG9rZW4="},  # base64 of admin-token
}
OBJECTS = [
    SECRET,
    *cache_manifests(
        "rows",
        "default",
        "data-cache:0.1.0",
        "/data/rows.parquet",
        2,
        token_secret="rows-cache-token",
    ),
]


def test_a_plan_with_cache_statefulsets_serves_them_in_one_process() -> None:
    assert serve_command("py", OBJECTS) == [
        "py", "-m", "trainer_data_cache", "serve", "/data/rows.parquet", "--name", "data",
        "--nodes", "2", "--replicas", "1",
    ]  # fmt: skip
    assert serve_command("py", [{"kind": "ConfigMap", "metadata": {"name": "x"}}]) is None


def test_the_jobset_reaches_the_local_endpoint_instead_of_the_service() -> None:
    service = cache_endpoint("rows", "default")
    jobset = {
        "metadata": {"name": "rows", "namespace": "default"},
        "spec": {"env": [{"name": "DATA_CACHE_ENDPOINT", "value": service}], "args": [service]},
    }
    local = local_jobset(jobset, "grpc://127.0.0.1:4321")
    assert local["spec"] == {
        "env": [{"name": "DATA_CACHE_ENDPOINT", "value": "grpc://127.0.0.1:4321"}],
        "args": ["grpc://127.0.0.1:4321"],
    }
    assert jobset["spec"]["args"] == [service]


def test_the_cache_and_the_pods_get_the_tokens_of_the_plans_secret() -> None:
    assert cache_tokens(OBJECTS) == {
        "DATA_CACHE_TOKEN": "read-token",
        "DATA_CACHE_ADMIN_TOKEN": "admin-token",
    }
    env = trainer_env("rows", "default", "data", token_secret="rows-cache-token")
    pod = {"containers": [{"name": "node", "env": env}]}
    jobset = {
        "metadata": {"name": "rows", "namespace": "default"},
        "spec": {"replicatedJobs": [{"template": {"spec": {"template": {"spec": pod}}}}]},
    }
    local = local_jobset(jobset, "grpc://127.0.0.1:4321", OBJECTS)
    (container,) = local["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"][
        "containers"
    ]
    assert container["env"] == [
        {"name": "DATA_CACHE_ENDPOINT", "value": "grpc://127.0.0.1:4321"},
        {"name": "DATA_CACHE_DATASET", "value": "data"},
        {"name": "DATA_CACHE_TOKEN", "value": "read-token"},
    ]
    assert "valueFrom" in pod["containers"][0]["env"][2]  # the plan's JobSet is unchanged


def test_start_returns_the_first_line_and_logs_the_rest(tmp_path: Path) -> None:
    script = "import sys, time; print('grpc://127.0.0.1:9', flush=True); print('more'); "
    script += "sys.stdout.flush(); time.sleep(60)"
    process, endpoint = start_cache([sys.executable, "-c", script], tmp_path / "c.log", {})
    try:
        assert endpoint == "grpc://127.0.0.1:9"
        assert process.poll() is None
    finally:
        process.terminate()  # our unreaped child
    assert process.wait(timeout=10) != 0


@pytest.mark.parametrize(
    ("script", "timeout", "message"),
    [
        pytest.param("import sys; sys.exit(3)", 60.0, "exited with code 3", id="exits"),
        pytest.param("import time; time.sleep(60)", 0.5, "no endpoint within 0.5 s", id="silent"),
    ],
)
def test_a_cache_that_does_not_serve_fails_with_the_reason(
    tmp_path: Path, script: str, timeout: float, message: str
) -> None:
    with pytest.raises(CacheStartError, match=message):
        start_cache([sys.executable, "-c", script], tmp_path / "c.log", {}, timeout=timeout)
