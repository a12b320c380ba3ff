"""Properties of build for random valid TrainJobs: deterministic, idempotent, schema-valid."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from runtime_cases import (
    FIXED_SETTINGS,
    NOW,
    build_of,
    by_kind,
    jobset_schema_errors,
    make_job,
    make_runtime,
    replicated_job,
    runtime_doc,
    upstream_dir,
)
from trainer_runtime import Observed

RUNTIMES = [
    "torch-distributed",
    "deepspeed-distributed",
    "jax-distributed",
    "xgboost-distributed",
    "torchtune-llama3.2-1b",
    "torch-distributed-with-cache",
    "custom",  # a Flux runtime like upstream's flux-distributed example (not built in)
]
FLUX_RUNTIME = make_runtime({"numNodes": 1, "flux": {}}, [replicated_job("node", "trainer")])
NAMES = st.from_regex(r"[a-z][a-z0-9]{0,8}", fullmatch=True)
ENV_NAMES = st.from_regex(r"USER_[A-Z0-9_]{1,8}", fullmatch=True)
QUANTITIES = st.sampled_from(["1", "2", "500m", "3500m", "16"])
TEXTS = st.characters(blacklist_characters="\x00")  # the API refuses NUL in env values


@st.composite
def train_jobs(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    runtime_name = draw(st.sampled_from(RUNTIMES))
    trainer: dict[str, Any] = {"numNodes": draw(st.integers(1, 64))}
    if runtime_name.startswith("torchtune"):
        trainer = {"command": ["tune", "run"], "numNodes": 1}
    elif draw(st.booleans()):
        trainer["command"] = ["python3", "-c", draw(st.text(min_size=1, max_size=20))]
    env = draw(st.lists(ENV_NAMES, max_size=4, unique=True))
    if env:
        trainer["env"] = [
            {"name": name, "value": draw(st.text(TEXTS, max_size=10))} for name in env
        ]
    if draw(st.booleans()):
        trainer["resourcesPerNode"] = {
            "limits": {"cpu": draw(QUANTITIES)},
            "requests": {"memory": "1Gi"},
        }
    if runtime_name == "custom":
        trainer["numProcPerNode"] = draw(st.integers(1, 8))
        if draw(st.booleans()):
            gpus = str(draw(st.integers(1, 8)))
            trainer["resourcesPerNode"] = {"limits": {"nvidia.com/gpu": gpus}}
    job = make_job(name=draw(NAMES), runtime=runtime_name, **trainer)
    job["spec"]["suspend"] = draw(st.booleans())
    if draw(st.booleans()):
        job["spec"]["runtimePatches"] = [
            {
                "manager": "example.com/test",
                "trainingRuntimeSpec": {
                    "template": {"metadata": {"labels": {"team": draw(NAMES)}}}
                },
            }
        ]
    runtime = copy.deepcopy(FLUX_RUNTIME) if runtime_name == "custom" else runtime_doc(runtime_name)
    if draw(st.booleans()):
        runtime["spec"]["podGroupPolicy"] = draw(
            st.sampled_from([{"coscheduling": {"scheduleTimeoutSeconds": 30}}, {"volcano": {}}])
        )
    return job, runtime


PROPERTY_SETTINGS = settings(max_examples=40, deadline=None, derandomize=True)


@PROPERTY_SETTINGS
@given(train_jobs())
def test_build_is_deterministic(case: tuple[dict[str, Any], dict[str, Any]]) -> None:
    job, runtime = case
    first = build_of(
        copy.deepcopy(job), copy.deepcopy(runtime), Observed(), NOW, settings=FIXED_SETTINGS
    )
    second = build_of(job, runtime, Observed(), NOW, settings=FIXED_SETTINGS)
    assert first == second


@PROPERTY_SETTINGS
@given(train_jobs())
def test_building_from_its_own_output_changes_nothing(
    case: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    job, runtime = case
    first = build_of(job, runtime, Observed(), NOW, settings=FIXED_SETTINGS)
    assert first.status is not None
    (jobset,) = by_kind(list(first.apply), "JobSet")
    others = [obj for obj in first.apply if obj["kind"] != "JobSet"]
    job["status"] = first.status.to_dict()
    again = build_of(
        job, runtime, Observed(jobset=jobset, objects=others), NOW, settings=FIXED_SETTINGS
    )
    assert again.status is None
    if job["spec"]["suspend"]:
        kinds = {"ConfigMap", "Secret", "PodGroup"}
        reapplied = {(obj["kind"], obj["metadata"]["name"]) for obj in again.apply}
        assert (("ConfigMap", f"{job['metadata']['name']}-runtime-snapshot")) not in reapplied
        assert by_kind(list(again.apply), "JobSet") == [jobset]
        assert [obj for obj in again.apply if obj["kind"] in kinds] == [
            obj for obj in others if (obj["kind"], obj["metadata"]["name"]) in reapplied
        ]
    else:
        assert again.apply == ()


@pytest.mark.skipif(
    upstream_dir() is None, reason="upstream reference data not found (set TRAINER_UPSTREAM_DIR)"
)
@PROPERTY_SETTINGS
@given(train_jobs())
def test_every_jobset_is_valid_against_the_crd_schema(
    case: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    job, runtime = case
    plan = build_of(job, runtime, Observed(), NOW, settings=FIXED_SETTINGS)
    (jobset,) = by_kind(list(plan.apply), "JobSet")
    assert jobset_schema_errors(jobset) == []
