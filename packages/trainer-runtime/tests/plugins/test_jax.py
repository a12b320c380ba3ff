"""JAX plugin: process count, id and coordinator after the user env."""

from __future__ import annotations

from runtime_cases import (
    COMPLETION_INDEX,
    container_of,
    env_of,
    field_errors,
    make_job,
    rendered_jobset,
    runtime_doc,
)


def test_jax_env_after_user_env() -> None:
    job = make_job(
        runtime="jax-distributed", numNodes=4, env=[{"name": "XLA_FLAGS", "value": "--x"}]
    )
    node = container_of(rendered_jobset(job, runtime_doc("jax-distributed")), "node")
    assert list(env_of(node).items()) == [
        ("XLA_FLAGS", "--x"),
        ("JAX_NUM_PROCESSES", "4"),
        ("JAX_PROCESS_ID", COMPLETION_INDEX),
        ("JAX_COORDINATOR_ADDRESS", "alpha-node-0-0.alpha:29500"),
    ]
    assert node["ports"] == [{"containerPort": 29500}]


def test_jax_reserved_env() -> None:
    job = make_job(runtime="jax-distributed", env=[{"name": "JAX_PROCESS_ID", "value": "0"}])
    assert field_errors(job, runtime_doc("jax-distributed")) == [
        "spec.trainer.env[0].name: JAX_PROCESS_ID is reserved for the JAX runtime"
    ]
