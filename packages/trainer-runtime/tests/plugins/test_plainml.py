"""PlainML plugin: node count and env without a framework policy, nothing with one."""

from __future__ import annotations

from runtime_cases import (
    container_of,
    env_of,
    make_job,
    make_runtime,
    rendered_jobset,
    replicated_job,
)


def test_plain_runtime_gets_node_count_and_user_env_only() -> None:
    runtime = make_runtime({"numNodes": 2}, [replicated_job("node", "trainer")])
    jobset = rendered_jobset(
        make_job(runtime="custom", numNodes=5, env=[{"name": "A", "value": "1"}]), runtime
    )
    assert jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["parallelism"] == 5
    node = container_of(jobset, "node")
    assert env_of(node) == {"A": "1"}
    assert "ports" not in node


def test_plain_runtime_uses_runtime_num_nodes_by_default() -> None:
    runtime = make_runtime({"numNodes": 2}, [replicated_job("node", "trainer")])
    jobset = rendered_jobset(make_job(runtime="custom"), runtime)
    assert jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["completions"] == 2


def test_framework_policy_leaves_node_count_and_env_to_its_plugin() -> None:
    runtime = make_runtime({"numNodes": 2, "jax": {}}, [replicated_job("node", "trainer")])
    jobset = rendered_jobset(make_job(runtime="custom", numNodes=3), runtime)
    assert jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["parallelism"] == 3
    assert list(env_of(container_of(jobset, "node"))) == [
        "JAX_NUM_PROCESSES",
        "JAX_PROCESS_ID",
        "JAX_COORDINATOR_ADDRESS",
    ]
