"""The local stand-in for a job's cache: which plans have one, its process, its address."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from data_cache_manifests import cache_endpoint, cache_manifests, trainer_env
from trainer_sdk import constants
from trainer_sdk.backends.local.plan import LateValue, bind
from trainer_sdk.backends.local.submit.pods import expand_pods
from trainer_sdk.backends.local.supervisor.caches import (
    CacheStartError,
    data_cache,
    start_cache,
    with_endpoint_slots,
    with_secret_values,
)

from ..submit.test_pods import jobset, replicated_job

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
    cache = data_cache(OBJECTS)
    assert cache is not None
    assert cache.args == (
        "serve", "/data/rows.parquet", "--name", "data", "--nodes", "2", "--replicas", "1",
    )  # fmt: skip
    assert data_cache([{"kind": "ConfigMap", "metadata": {"name": "x"}}]) is None


def test_the_pods_reach_the_local_endpoint_where_the_framework_put_the_services() -> None:
    """The probe's argument and DATA_CACHE_ENDPOINT get the endpoint; a user's argument or env
    that names the Service, whole or in part, is the user's and stays as written."""
    service = cache_endpoint("job", "default")
    probe = ["data-cache", "probe", service, "--wait", "600"]
    users = ["python", "t.py", service, f"--cache={service}"]
    env = [{"name": "DATA_CACHE_ENDPOINT", "value": service}, {"name": "MINE", "value": service}]
    manifest = jobset(
        replicated_job(constants.DATASET_INITIALIZER, probe),
        replicated_job("node", users, env=env, depends_on=constants.DATASET_INITIALIZER),
    )
    endpoint = "grpc://127.0.0.1:4321"
    [(_, [initializer]), (_, [node])] = [
        (job, [bind(pod, {LateValue.CACHE_ENDPOINT: endpoint}) for pod in pods])
        for job, pods in with_endpoint_slots(expand_pods(manifest), manifest)
    ]
    assert initializer.command == ("data-cache", "probe", endpoint, "--wait", "600")
    assert node.command == tuple(users)
    assert (node.env["DATA_CACHE_ENDPOINT"], node.env["MINE"]) == (endpoint, service)


def test_the_cache_and_the_pods_get_the_tokens_of_the_plans_secret() -> None:
    cache = data_cache(OBJECTS)
    assert cache is not None
    assert cache.env == {"DATA_CACHE_TOKEN": "read-token", "DATA_CACHE_ADMIN_TOKEN": "admin-token"}
    env = trainer_env("rows", "default", "data", token_secret="rows-cache-token")
    pod = {"containers": [{"name": "node", "env": env}]}
    manifest = {
        "metadata": {"name": "rows", "namespace": "default"},
        "spec": {"replicatedJobs": [{"template": {"spec": {"template": {"spec": pod}}}}]},
    }
    local = with_secret_values(manifest, OBJECTS)
    (container,) = local["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"][
        "containers"
    ]
    assert container["env"] == [
        {"name": "DATA_CACHE_ENDPOINT", "value": cache_endpoint("rows", "default")},
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
