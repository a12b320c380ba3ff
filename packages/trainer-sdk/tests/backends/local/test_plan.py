"""The local plan: its JSON form holds every field, and binding fills exactly its slots."""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from trainer_sdk.backends.local.jobdir import JobDir
from trainer_sdk.backends.local.packages import PackagePlan
from trainer_sdk.backends.local.plan import (
    LateValue,
    LocalPlan,
    LocalPod,
    Slot,
    Text,
    bind,
    from_document,
    to_document,
)
from trainer_sdk.backends.local.submit import planning
from trainer_sdk.backends.local.submit.compiler import compile_plan
from trainer_sdk.manifests import admission

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


def planned(runtime: str, trainer: dict[str, Any], **spec: Any) -> planning.Planned:
    """The runtime framework's objects for a TrainJob ``job`` on a built-in runtime."""
    manifest = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "job", "namespace": "default"},
        "spec": {"runtimeRef": {"name": runtime}, "trainer": trainer, **spec},
    }
    runtime_manifest = planning.builtin_runtime_manifests()[runtime]
    return planning.plan_trainjob(
        admission.parse_trainjob(manifest), admission.parse_runtime(runtime_manifest), NOW
    )


def cache_plan(tmp_path: Path) -> LocalPlan:
    """A plan with a cache, a checkpoint claim, namespaces, packages and every policy set."""
    objects = planned(
        "torch-distributed-with-cache",
        {"numNodes": 2, "command": ["torchrun", "train.py"]},
        initializer={
            "dataset": {
                "storageUri": "cache://local/rows",
                "env": [{"name": "METADATA_LOC", "value": "/data/rows.parquet"}],
            }
        },
    )
    jobset = objects.jobset
    jobset["spec"]["failurePolicy"] = {"maxRestarts": 2}
    jobset["spec"]["successPolicy"] = {"operator": "Any", "targetReplicatedJobs": ["node"]}
    pod_spec = jobset["spec"]["replicatedJobs"][-1]["template"]["spec"]["template"]["spec"]
    pod_spec["terminationGracePeriodSeconds"] = 40
    pod_spec["volumes"] = [{"name": "ckpt", "persistentVolumeClaim": {"claimName": "c"}}]
    container = pod_spec["containers"][0]
    container["workingDir"] = "/ckpt"
    container["volumeMounts"] = [{"name": "ckpt", "mountPath": "/ckpt", "readOnly": True}]
    container["resources"] = {"limits": {"nvidia.com/gpu": 1}}
    plan = compile_plan(
        jobset,
        objects.others,
        JobDir(tmp_path, "job"),
        isolated=True,
        gpus=0,
        active_deadline_seconds=600.0,
    )
    packages = PackagePlan(("a", "b==1"), (("a", "2.0"),), ("b==1",), True, ("a==2.0",))
    return dataclasses.replace(plan, packages=packages, pip_index_urls=("https://i/simple",))


def mpi_plan(tmp_path: Path) -> LocalPlan:
    objects = planned("deepspeed-distributed", {"numNodes": 2, "command": ["mpirun", "t.py"]})
    return compile_plan(
        objects.jobset, objects.others, JobDir(tmp_path, "job"), isolated=False, gpus=0
    )


def test_the_json_form_holds_the_whole_plan(tmp_path: Path) -> None:
    full, mpi = cache_plan(tmp_path), mpi_plan(tmp_path)
    unset = [
        field.name
        for field in dataclasses.fields(LocalPlan)
        if getattr(full, field.name) in (field.default, PackagePlan())
        and getattr(mpi, field.name) in (field.default, PackagePlan())
    ]
    assert unset == [], "the round trip below must see every field set"
    pods = [pod for plan in (full, mpi) for pod in plan.pods()]
    for pod_field in dataclasses.fields(LocalPod):
        assert any(getattr(pod, pod_field.name) != pod_field.default for pod in pods), pod_field
    for plan in (full, mpi):
        assert from_document(json.loads(json.dumps(to_document(plan)))) == plan


def test_binding_fills_each_slot_and_nothing_else() -> None:
    pod = LocalPod(
        replicated_job="node",
        job_index=0,
        pod_index=0,
        name="job-node-0-0",
        step="node-0",
        container="node",
        command=("run", "a:29500,b:29500", "29500"),
        env={"PORT": "29500", "OTHER": "29500"},
        slots=(
            Slot(LateValue.MASTER_PORT, 2, 7, argument=1),
            Slot(LateValue.MASTER_PORT, 10, 15, argument=1),
            Slot(LateValue.MASTER_PORT, 0, 5, env="PORT"),
        ),
    )
    bound = bind(pod, {LateValue.MASTER_PORT: "4"})
    assert bound.command == ("run", "a:4,b:4", "29500")
    assert bound.env == {"PORT": "4", "OTHER": "29500"}
    assert bound.slots == ()
    with pytest.raises(KeyError):
        bind(pod, {LateValue.SSH_PORT: "22"})


def test_a_slot_names_an_env_entry_or_an_argument() -> None:
    with pytest.raises(ValueError, match="not both"):
        Slot(LateValue.MASTER_PORT, 0, 1, env="A", argument=0)
    with pytest.raises(ValueError, match="not both"):
        Slot(LateValue.MASTER_PORT, 0, 1)


def test_editing_a_text_leaves_its_late_values_where_they_are() -> None:
    text = Text("/in ") + Text.late(LateValue.CACHE_ENDPOINT, "grpc://svc") + Text(" /in/x")
    edited = text.map_literals(lambda literal: Text(literal.replace("/in", "/local/in")))
    assert edited == Text("/local/in grpc://svc /local/in/x", ((10, 20, LateValue.CACHE_ENDPOINT),))
