"""Torch plugin: PET_* env in upstream's order, numProcPerNode resolution, torchtune commands."""

from __future__ import annotations

from typing import Any

import pytest
from runtime_cases import (
    COMPLETION_INDEX,
    container_of,
    env_of,
    field_errors,
    make_job,
    make_runtime,
    rendered_jobset,
    replicated_job,
    runtime_doc,
)
from trainer_runtime import InvalidTrainJobError
from trainer_runtime.plugins.torch import resolve_num_proc_per_node


def test_torch_sets_pet_env_after_user_env() -> None:
    job = make_job(numNodes=3, env=[{"name": "USER_VAR", "value": "x"}])
    node = container_of(rendered_jobset(job, runtime_doc("torch-distributed")), "node")
    assert list(env_of(node).items()) == [
        ("USER_VAR", "x"),
        ("PET_NNODES", "3"),
        ("PET_NPROC_PER_NODE", "1"),
        ("PET_NODE_RANK", COMPLETION_INDEX),
        ("PET_MASTER_ADDR", "alpha-node-0-0.alpha"),
        ("PET_MASTER_PORT", "29500"),
    ]
    assert node["ports"] == [{"containerPort": 29500}]


@pytest.mark.parametrize(
    ("requested", "resources", "expected"),
    [
        pytest.param(None, None, "1", id="no-resources-one-process"),
        pytest.param(None, {"limits": {"nvidia.com/gpu": "4"}}, "auto", id="gpu-stays-auto"),
        pytest.param(
            None,
            {"requests": {"amd.com/gpu": "1", "cpu": "8"}},
            "auto",
            id="any-gpu-resource-stays-auto",
        ),
        pytest.param(None, {"limits": {"cpu": "3500m"}}, "4", id="cpu-limit-rounded-up"),
        pytest.param(None, {"requests": {"cpu": "2"}}, "2", id="cpu-request-when-no-limit"),
        pytest.param(
            None, {"limits": {"cpu": "3"}, "requests": {"cpu": "2"}}, "2", id="request-before-limit"
        ),
        pytest.param(
            None, {"limits": {"cpu": "3"}, "requests": {"cpu": "0"}}, "3", id="zero-request-limit"
        ),
        pytest.param(None, {"limits": {"cpu": "100m"}}, "1", id="at-least-one"),
        pytest.param(8, {"limits": {"nvidia.com/gpu": "2"}}, "8", id="integer-kept-with-gpu"),
        pytest.param(8, {"limits": {"cpu": "2"}}, "8", id="integer-kept"),
    ],
)
def test_resolve_num_proc_per_node(requested: int | None, resources: Any, expected: str) -> None:
    assert resolve_num_proc_per_node(requested, resources) == expected


def test_num_proc_per_node_from_resources_per_node() -> None:
    job = make_job(numNodes=2, resourcesPerNode={"limits": {"cpu": "4"}})
    node = container_of(rendered_jobset(job, runtime_doc("torch-distributed")), "node")
    assert env_of(node)["PET_NPROC_PER_NODE"] == "4"


PET_NAMES = [
    "PET_NNODES",
    "PET_NPROC_PER_NODE",
    "PET_NODE_RANK",
    "PET_MASTER_ADDR",
    "PET_MASTER_PORT",
]


def _with_injection(
    runtime: dict[str, Any], targets: list[dict[str, Any]], **extra: list[dict[str, Any]]
) -> dict[str, Any]:
    """``runtime`` with envInjection ``targets`` and ``extra`` pod-spec lists on its node job."""
    runtime["spec"]["mlPolicy"].setdefault("torch", {})["envInjection"] = {"targets": targets}
    node = next(
        r for r in runtime["spec"]["template"]["spec"]["replicatedJobs"] if r["name"] == "node"
    )
    pod_spec = node["template"]["spec"]["template"]["spec"]
    for key, items in extra.items():
        pod_spec.setdefault(key, []).extend(items)
    return runtime


def _custom_torch_runtime(**extra: list[dict[str, Any]]) -> dict[str, Any]:
    return _with_injection(
        make_runtime({"torch": {}}, [replicated_job("node", "trainer")]),
        [{"jobName": "node", "containerNames": ["helper"]}],
        **extra,
    )


def _pod_spec_of(jobset: dict[str, Any], job: str) -> dict[str, Any]:
    replicated = next(r for r in jobset["spec"]["replicatedJobs"] if r["name"] == job)
    pod_spec: dict[str, Any] = replicated["template"]["spec"]["template"]["spec"]
    return pod_spec


@pytest.mark.parametrize(
    "where",
    [
        pytest.param("containers", id="sidecar-container"),
        pytest.param("initContainers", id="init-container"),
    ],
)
def test_env_injection_targets_get_pet_env(where: str) -> None:
    runtime = _custom_torch_runtime(**{where: [{"name": "helper", "image": "s"}]})
    jobset = rendered_jobset(make_job(runtime="custom", numNodes=2), runtime)
    (helper,) = [c for c in _pod_spec_of(jobset, "node")[where] if c["name"] == "helper"]
    assert list(env_of(helper)) == PET_NAMES
    assert env_of(helper)["PET_NNODES"] == "2"
    assert env_of(helper)["PET_MASTER_ADDR"] == "alpha-node-0-0.alpha"


def test_runtime_patch_env_of_an_init_container_is_ordered_as_upstream() -> None:
    """Upstream's "Torch: Should succeed to create TrainJob with RuntimePatches"."""
    init_env = [
        {"name": "INIT_ENV", "value": "original_init"},
        {"name": "DATASET_PATH", "value": "runtime"},
    ]
    runtime = make_runtime({"torch": {}}, [replicated_job("node", "trainer")])
    node = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]
    node["template"]["spec"]["template"]["spec"]["initContainers"] = [
        {"name": "override-init-container", "image": "test:runtime", "env": init_env}
    ]
    job = make_job(runtime="custom")
    patch_env = [
        {"name": "INIT_ENV", "value": "override_init"},
        {"name": "NEW_VALUE", "value": "from_overrides"},
    ]
    pod_patch = {"initContainers": [{"name": "override-init-container", "env": patch_env}]}
    job["spec"]["runtimePatches"] = [
        {
            "manager": "test.io/manager",
            "trainingRuntimeSpec": {
                "template": {
                    "spec": {
                        "replicatedJobs": [
                            {
                                "name": "node",
                                "template": {"spec": {"template": {"spec": pod_patch}}},
                            }
                        ]
                    }
                }
            },
        }
    ]
    (init,) = _pod_spec_of(rendered_jobset(job, runtime), "node")["initContainers"]
    assert list(env_of(init).items()) == [
        ("INIT_ENV", "override_init"),
        ("NEW_VALUE", "from_overrides"),
        ("DATASET_PATH", "runtime"),
    ]


def test_env_injection_in_torchtune_job_gets_master_address_and_port() -> None:
    runtime = _with_injection(
        runtime_doc(TORCHTUNE),
        [{"jobName": "node", "containerNames": ["preflight"]}],
        initContainers=[{"name": "preflight", "image": "busybox"}],
    )
    job = make_job(runtime=TORCHTUNE, command=["tune", "run"])
    jobset = rendered_jobset(job, runtime)
    (preflight,) = _pod_spec_of(jobset, "node")["initContainers"]
    assert list(env_of(preflight)) == PET_NAMES
    assert env_of(preflight)["PET_MASTER_PORT"] == "29500"
    assert "PET_MASTER_ADDR" not in env_of(container_of(jobset, "node"))


@pytest.mark.parametrize(
    ("targets", "expected"),
    [
        pytest.param(
            [{"jobName": "node", "containerNames": ["missing"]}],
            [
                'spec.runtimeRef: envInjection target podSet "node" container "missing" '
                "not found in runtime template"
            ],
            id="missing-container",
        ),
        pytest.param(
            [{"jobName": "nowhere", "containerNames": ["a", "b"]}],
            [
                'spec.runtimeRef: envInjection target podSet "nowhere" container "a" '
                "not found in runtime template",
                'spec.runtimeRef: envInjection target podSet "nowhere" container "b" '
                "not found in runtime template",
            ],
            id="missing-job-each-container",
        ),
    ],
)
def test_env_injection_target_missing_is_refused(
    targets: list[dict[str, Any]], expected: list[str]
) -> None:
    runtime = _with_injection(
        make_runtime({"torch": {}}, [replicated_job("node", "trainer")]), targets
    )
    job = make_job(runtime="custom")
    assert field_errors(job, runtime) == expected
    with pytest.raises(InvalidTrainJobError) as raised:
        rendered_jobset(job, runtime)
    assert [str(error) for error in raised.value.errors] == expected


def test_reserved_env_is_rejected_with_its_index() -> None:
    job = make_job(env=[{"name": "OK", "value": "1"}, {"name": "PET_NNODES", "value": "9"}])
    assert field_errors(job, runtime_doc("torch-distributed")) == [
        "spec.trainer.env[1].name: PET_NNODES is reserved for the torch runtime"
    ]


TORCHTUNE = "torchtune-llama3.2-1b"
RECIPE = "trainer_sdk/training/engines/torchtune/recipe.py"
# The runtime's own key=value overrides, in its order: its data set defaults, then its paths.
OVERRIDES = [
    "dataset=torchtune.datasets.instruct_dataset",
    "dataset.source=parquet",
    "dataset.data_dir=/workspace/dataset/data",
    "output_dir=/workspace/output",
    "tokenizer.path=/workspace/model/original/tokenizer.model",
    "checkpointer.checkpoint_dir=/workspace/model",
]
ONE_GPU = {"limits": {"nvidia.com/gpu": "1"}}


@pytest.mark.parametrize(
    ("runtime", "trainer", "expected_tail"),
    [
        pytest.param(
            TORCHTUNE,
            {},
            ["--rdzv_endpoint=alpha-node-0-0.alpha:29500", RECIPE, "--config", "llama3_2/1B_full"],
            id="two-gpus-full-distributed",
        ),
        pytest.param(
            TORCHTUNE,
            {"resourcesPerNode": ONE_GPU},
            [RECIPE, "--config", "llama3_2/1B_full"],
            id="one-gpu-one-process",
        ),
        pytest.param(
            TORCHTUNE,
            {"numProcPerNode": 1},
            [RECIPE, "--config", "llama3_2/1B_full"],
            id="one-process-per-node",
        ),
        pytest.param(
            TORCHTUNE,
            {"numNodes": 2, "resourcesPerNode": ONE_GPU},
            ["--rdzv_endpoint=alpha-node-0-0.alpha:29500", RECIPE, "--config", "llama3_2/1B_full"],
            id="two-nodes-distributed",
        ),
        pytest.param(
            TORCHTUNE,
            {"args": ["model.lora_attn_modules=[q_proj,v_proj]"]},
            ["--rdzv_endpoint=alpha-node-0-0.alpha:29500", RECIPE, "--config", "llama3_2/1B_lora"],
            id="lora-distributed",
        ),
        pytest.param(
            TORCHTUNE,
            {"resourcesPerNode": ONE_GPU, "args": ["model.quantize_base=True"]},
            [RECIPE, "--config", "llama3_2/1B_qlora_single_device"],
            id="qlora-one-process",
        ),
        pytest.param(
            TORCHTUNE,
            {"args": ["model.quantize_base=True"]},
            [
                "--rdzv_endpoint=alpha-node-0-0.alpha:29500",
                RECIPE,
                "--config",
                "llama3_2/1B_qlora_single_device",
            ],
            id="qlora-sharded",
        ),
        pytest.param(
            TORCHTUNE,
            {"resourcesPerNode": ONE_GPU, "args": ["model.quantize_base=True", "model.use_dora=1"]},
            [RECIPE, "--config", "llama3_2/1B_lora"],
            id="dora-is-lora",
        ),
        pytest.param(
            "torchtune-qwen2.5-1.5b",
            {"resourcesPerNode": ONE_GPU, "args": ["model.lora_attn_modules=[q_proj]"]},
            [RECIPE, "--config", "qwen2_5/1.5B_lora"],
            id="qwen-lora",
        ),
        pytest.param(
            "torchtune-qwen2.5-1.5b",
            {"resourcesPerNode": ONE_GPU, "args": ["model.quantize_base=True"]},
            [RECIPE, "--config", "qwen2_5/1.5B_lora"],
            id="qwen-qlora-takes-its-lora-config",
        ),
    ],
)
def test_torchtune_command_synthesis(
    runtime: str, trainer: dict[str, Any], expected_tail: list[str]
) -> None:
    job = make_job(runtime=runtime, command=["tune", "run"], **trainer)
    node = container_of(rendered_jobset(job, runtime_doc(runtime)), "node")
    assert node["command"][:2] == ["tune", "run"]
    assert node["command"][2 : 2 + len(expected_tail)] == expected_tail
    assert node.get("args", []) == trainer.get("args", [])
    assert "PET_MASTER_ADDR" not in env_of(node)


def test_torchtune_runtime_overrides_follow_the_recipe_and_precede_the_job_args() -> None:
    job = make_job(runtime=TORCHTUNE, command=["tune", "run"], args=["dataset.source=json"])
    node = container_of(rendered_jobset(job, runtime_doc(TORCHTUNE)), "node")
    assert node["command"][-len(OVERRIDES) :] == OVERRIDES
    assert node["args"] == ["dataset.source=json"]


def test_torchtune_qwen_runtime_keeps_its_tokenizer_files() -> None:
    job = make_job(runtime="torchtune-qwen2.5-1.5b", command=["tune", "run"])
    node = container_of(rendered_jobset(job, runtime_doc("torchtune-qwen2.5-1.5b")), "node")
    assert "tokenizer.path=/workspace/model/vocab.json" in node["command"]
    assert "tokenizer.merges_file=/workspace/model/merges.txt" in node["command"]


@pytest.mark.parametrize(
    ("runtime", "trainer", "expected"),
    [
        pytest.param(
            TORCHTUNE,
            {"args": ["output_dir=/tmp"]},
            ["spec.trainer.args[0]: must not set 'output_dir': the runtime manages it"],
            id="immutable-config",
        ),
        pytest.param(
            TORCHTUNE,
            {"args": ["epochs=1", "checkpointer.checkpoint_files=[a.safetensors]"]},
            [
                "spec.trainer.args[1]: must not set 'checkpointer.checkpoint_files': the runtime "
                "manages it"
            ],
            id="weights-come-from-the-checkpoint-directory",
        ),
        pytest.param(
            "torchtune-mistral-7b",
            {},
            [
                "spec.runtimeRef.name: must name a torchtune runtime of a supported model "
                "['llama3_2/1B', 'llama3_2/3B', 'llama3_3/70B', 'qwen2_5/1.5B'], got model "
                "'mistral/7B'"
            ],
            id="unsupported-model",
        ),
    ],
)
def test_torchtune_validation(runtime: str, trainer: dict[str, Any], expected: list[str]) -> None:
    document = runtime_doc(runtime if runtime.startswith("torchtune-l") else TORCHTUNE)
    document["metadata"]["name"] = runtime
    job = make_job(runtime=runtime, command=["tune", "run"], **trainer)
    assert field_errors(job, document) == expected


@pytest.mark.parametrize(
    "trainer",
    [
        pytest.param({"numNodes": 2}, id="multi-node-full"),
        pytest.param(
            {"numNodes": 2, "args": ["model.lora_attn_modules=[q_proj,v_proj]"]},
            id="multi-node-lora",
        ),
        pytest.param({"numProcPerNode": 2, "args": ["model.quantize_base=True"]}, id="qlora-2"),
    ],
)
def test_torchtune_runs_any_shape_the_recipe_shards(trainer: dict[str, Any]) -> None:
    job = make_job(runtime="torchtune-llama3.2-3b", command=["tune", "run"], **trainer)
    assert field_errors(job, runtime_doc("torchtune-llama3.2-3b")) == []
