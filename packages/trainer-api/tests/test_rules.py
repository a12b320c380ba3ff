"""Each CEL rule written into the CRDs agrees with its Python twin (evaluated with cel-python)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import TypeAdapter
from trainer_api import (
    ContainerPatch,
    DatasetInitializer,
    FluxMLPolicySource,
    JobSetSpec,
    LogUniformSpace,
    MLPolicy,
    ModelInitializer,
    MPIMLPolicySource,
    OptimizationJobSpec,
    RuntimePatch,
    SearchAlgorithm,
    SearchSpace,
    TorchEnvInjectionTarget,
    Trainer,
    TrainerStatus,
    TrainJob,
    TrainJobSpec,
    TrainJobTemplateSpec,
    UniformSpace,
    VolumeClaimPolicy,
)
from trainer_api._base import ApiModel
from trainer_api._rules import CLASS_RULES, FIELD_SPECS, Rule
from trainer_api.crds import crd_manifests

celpy = pytest.importorskip("celpy", reason="cel-python evaluates the CEL rules of the CRDs")

Owner = tuple[type[ApiModel], str | None, int]
"""A rule: its model, its field (None for a rule on the whole object), its index."""


def job(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"runtimeRef": {"name": "r"}}}


def jobset(order: str, depends: bool) -> dict[str, Any]:
    node: dict[str, Any] = {
        "name": "node",
        "template": {"spec": {"template": {"spec": {"containers": []}}}},
    }
    if depends:
        node["dependsOn"] = [{"name": "init", "status": "Complete"}]
    return {"startupPolicy": {"startupPolicyOrder": order}, "replicatedJobs": [node]}


def optimization(
    num: int = 2, parallel: int = 1, grid: bool = False, uniform: bool = False
) -> dict[str, Any]:
    space = (
        {"uniform": {"min": "0", "max": "1"}} if uniform else {"categorical": {"choices": ["a"]}}
    )
    return {
        "objectives": [{"metric": "loss"}],
        "searchAlgorithm": {"grid": {}} if grid else {"random": {}},
        "parameters": [{"name": "p", "searchSpace": space}],
        "numTrials": num,
        "parallelTrials": parallel,
        "trainJobTemplate": {"spec": {"runtimeRef": {"name": "r"}}},
    }


CASES: list[tuple[Owner, Any, bool]] = [
    ((TrainJob, None, 0), job("mnist-2"), True),
    ((TrainJob, None, 0), job("2-mnist"), False),
    ((TrainJob, None, 0), job("Mnist"), False),
    ((TrainJob, None, 1), job("a" * 64), False),
    ((TrainJob, None, 1), job("a" * 63), True),
    ((TrainerStatus, None, 0), {"lastUpdatedTime": "2026-01-01T00:00:00Z"}, True),
    ((TrainerStatus, None, 0), {"progressPercentage": 5}, False),
    ((MLPolicy, None, 0), {"torch": {}}, True),
    ((MLPolicy, None, 0), {"numNodes": 2}, True),
    ((MLPolicy, None, 0), {"torch": {}, "mpi": {}}, False),
    ((JobSetSpec, None, 0), jobset("InOrder", depends=False), True),
    ((JobSetSpec, None, 0), jobset("AnyOrder", depends=True), True),
    ((JobSetSpec, None, 0), jobset("InOrder", depends=True), False),
    ((VolumeClaimPolicy, None, 0), {"templates": [{"metadata": {"name": "w"}}]}, True),
    (
        (VolumeClaimPolicy, None, 0),
        {"templates": [{"metadata": {"name": "w", "namespace": ""}}]},
        True,
    ),
    (
        (VolumeClaimPolicy, None, 0),
        {"templates": [{"metadata": {"name": "w", "namespace": "x"}}]},
        False,
    ),
    ((ContainerPatch, None, 0), {"name": "sidecar", "env": [{"name": "A"}]}, True),
    ((ContainerPatch, None, 0), {"name": "node"}, True),
    ((ContainerPatch, None, 0), {"name": "node", "env": [{"name": "A"}]}, False),
    ((ContainerPatch, None, 0), {"name": "model-initializer", "env": []}, False),
    ((TrainJobSpec, "managed_by", 0), "kueue.x-k8s.io/multikueue", True),
    ((TrainJobSpec, "managed_by", 0), "example.com/other", False),
    ((ModelInitializer, "storage_uri", 0), "", True),
    ((ModelInitializer, "storage_uri", 0), "hf://meta-llama/Llama-3.2-1B", True),
    ((ModelInitializer, "storage_uri", 0), "meta-llama/Llama-3.2-1B", False),
    ((DatasetInitializer, "storage_uri", 0), "s3://bucket/data", True),
    ((DatasetInitializer, "storage_uri", 0), "bucket/data", False),
    ((Trainer, "num_proc_per_node", 0), 1, True),
    ((Trainer, "num_proc_per_node", 0), 0, False),
    ((RuntimePatch, "manager", 0), "example.io/platform-team", True),
    ((RuntimePatch, "manager", 0), "kueue.x-k8s.io/manager", True),
    ((RuntimePatch, "manager", 0), "platform-team", False),
    ((RuntimePatch, "manager", 0), "Example.io/team", False),
    ((MPIMLPolicySource, "num_proc_per_node", 0), 4, True),
    ((MPIMLPolicySource, "num_proc_per_node", 0), 0, False),
    ((FluxMLPolicySource, "num_proc_per_node", 0), 1, True),
    ((FluxMLPolicySource, "num_proc_per_node", 0), -1, False),
    ((TorchEnvInjectionTarget, "container_names", 0), ["sidecar"], True),
    ((TorchEnvInjectionTarget, "container_names", 0), ["sidecar", "node"], False),
    ((OptimizationJobSpec, None, 0), optimization(num=4, parallel=4), True),
    ((OptimizationJobSpec, None, 0), optimization(num=4, parallel=5), False),
    ((OptimizationJobSpec, None, 1), optimization(grid=True), True),
    ((OptimizationJobSpec, None, 1), optimization(grid=False, uniform=True), True),
    ((OptimizationJobSpec, None, 1), optimization(grid=True, uniform=True), False),
    ((SearchAlgorithm, None, 0), {"random": {"seed": 3}}, True),
    ((SearchAlgorithm, None, 0), {"grid": {}}, True),
    ((SearchAlgorithm, None, 0), {"random": {}, "grid": {}}, False),
    ((SearchAlgorithm, None, 0), {}, False),
    ((SearchSpace, None, 0), {"categorical": {"choices": ["a"]}}, True),
    ((SearchSpace, None, 0), {"uniform": {"min": "0", "max": "1"}}, True),
    ((SearchSpace, None, 0), {}, False),
    (
        (SearchSpace, None, 0),
        {"uniform": {"min": "0", "max": "1"}, "logUniform": {"min": "1", "max": "2"}},
        False,
    ),
    ((UniformSpace, None, 0), {"min": "-1.5", "max": "2e-1"}, True),
    ((UniformSpace, None, 0), {"min": "1", "max": "1"}, False),
    ((LogUniformSpace, None, 0), {"min": "1e-4", "max": "0.1"}, True),
    ((LogUniformSpace, None, 0), {"min": "0", "max": "0.1"}, False),
    ((LogUniformSpace, None, 1), {"min": "0.001", "max": "0.01"}, True),
    ((LogUniformSpace, None, 1), {"min": "0.1", "max": "0.01"}, False),
    ((TrainJobTemplateSpec, "metadata", 0), {"labels": {"team": "a"}}, True),
    ((TrainJobTemplateSpec, "metadata", 0), {"name": "x"}, False),
    ((TrainJobTemplateSpec, "metadata", 0), {"namespace": "x"}, False),
]


def rule_of(owner: Owner) -> Rule:
    model, field, index = owner
    rules = CLASS_RULES[model] if field is None else FIELD_SPECS[model][field].rules
    return rules[index]


def all_rules() -> set[Owner]:
    owners: set[Owner] = {
        (model, None, index) for model, rules in CLASS_RULES.items() for index in range(len(rules))
    }
    for model, specs in FIELD_SPECS.items():
        for field, spec in specs.items():
            owners.update((model, field, index) for index in range(len(spec.rules)))
    return owners


def evaluate_cel(rule: Rule, value: Any) -> bool:
    environment = celpy.Environment()
    program = environment.program(environment.compile(rule.cel))
    return bool(program.evaluate({"self": celpy.json_to_cel(value)}))


def evaluate_python(rule: Rule, owner: Owner, value: Any) -> bool:
    model, field, _ = owner
    # A rule on a field gets the field's value as the model holds it (an object as its model).
    target = model if field is None else model.model_fields[field].annotation
    subject = TypeAdapter(target).validate_python(value)
    return rule.check(subject)


@pytest.mark.parametrize(
    ("owner", "value", "valid"),
    [
        pytest.param(owner, value, valid, id=f"{owner[0].__name__}.{owner[1]}-{index}")
        for index, (owner, value, valid) in enumerate(CASES)
    ],
)
def test_cel_and_python_agree(owner: Owner, value: Any, valid: bool) -> None:
    rule = rule_of(owner)
    assert evaluate_python(rule, owner, value) is valid, rule.message
    assert evaluate_cel(rule, value) is valid, rule.cel


def test_every_cel_rule_has_cases_both_ways() -> None:
    covered = {(owner, valid) for owner, _, valid in CASES}
    assert {(owner, valid) for owner in all_rules() for valid in (True, False)} - covered == set()


def cel_rules(schema: Any) -> list[str]:
    if isinstance(schema, dict):
        own = [rule["rule"] for rule in schema.get("x-kubernetes-validations", [])]
        return own + [rule for value in schema.values() for rule in cel_rules(value)]
    if isinstance(schema, list):
        return [rule for item in schema for rule in cel_rules(item)]
    return []


def test_every_cel_rule_in_the_crds_compiles() -> None:
    rules = {rule for manifest in crd_manifests().values() for rule in cel_rules(manifest)}
    assert "self == oldSelf" in rules
    environment = celpy.Environment()
    for rule in sorted(rules):
        environment.compile(rule)


def test_transition_rule_compares_old_and_new() -> None:
    environment = celpy.Environment()
    program = environment.program(environment.compile("self == oldSelf"))
    old = celpy.json_to_cel({"numNodes": 2})
    assert program.evaluate({"self": celpy.json_to_cel({"numNodes": 2}), "oldSelf": old})
    assert not program.evaluate({"self": celpy.json_to_cel({"numNodes": 3}), "oldSelf": old})
