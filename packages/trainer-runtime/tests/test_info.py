"""runtime_info: runtimePatches in order, trainer and initializer settings, pod sets."""

from __future__ import annotations

import pytest
from runtime_cases import (
    as_job,
    as_runtime,
    info_of,
    make_job,
    make_runtime,
    replicated_job,
    runtime_doc,
)
from trainer_runtime.errors import BuildError


def _patch(manager: str, template: dict) -> dict:
    return {"manager": manager, "trainingRuntimeSpec": {"template": template}}


def test_patches_apply_in_list_order_and_merge_metadata() -> None:
    job = make_job()
    job["spec"]["runtimePatches"] = [
        _patch("a", {"metadata": {"labels": {"team": "a", "keep": "1"}}}),
        _patch("b", {"metadata": {"labels": {"team": "b"}, "annotations": {"x": "y"}}}),
    ]
    info = info_of(job, runtime_doc("torch-distributed"))
    assert info.metadata == {"labels": {"team": "b", "keep": "1"}, "annotations": {"x": "y"}}


def test_patch_merges_pod_spec_of_named_replicated_job_only() -> None:
    runtime = make_runtime(
        {"torch": {}},
        [
            replicated_job("init", "dataset-initializer", "dataset-initializer"),
            replicated_job("node", "trainer"),
        ],
    )
    job = make_job(runtime="custom")
    job["spec"]["runtimePatches"] = [
        _patch(
            "kueue",
            {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": "node",
                            "template": {
                                "spec": {
                                    "template": {
                                        "spec": {
                                            "nodeSelector": {"pool": "gpu"},
                                            "containers": [{"name": "sidecar", "image": "s"}],
                                        }
                                    }
                                }
                            },
                        }
                    ]
                }
            },
        )
    ]
    info = info_of(job, runtime)
    assert [ps.name for ps in info.pod_sets] == ["init", "node"]
    node = info.pod_set("node")
    assert node is not None
    assert node.pod_spec["nodeSelector"] == {"pool": "gpu"}
    # Kubernetes' strategic merge: an item only the patch has comes before the original's.
    assert [c["name"] for c in node.containers] == ["sidecar", "node"]
    init = info.pod_set("init")
    assert init is not None and "nodeSelector" not in init.pod_spec


def test_trainer_settings_reach_node_container_and_resources_merge() -> None:
    runtime = runtime_doc("torchtune-llama3.2-1b")
    job = make_job(
        runtime="torchtune-llama3.2-1b",
        image="my/image:1",
        args=["a"],
        resourcesPerNode={"requests": {"cpu": "2"}, "limits": {"memory": "8Gi"}},
    )
    info = info_of(job, runtime)
    container = info.trainer_container()
    assert container is not None
    assert container["image"] == "my/image:1"
    assert container["args"] == ["a"]
    assert container["resources"] == {
        "limits": {"nvidia.com/gpu": 2, "memory": "8Gi"},
        "requests": {"cpu": "2"},
    }


def test_initializers_get_storage_uri_env_and_secret() -> None:
    job = make_job(runtime="torchtune-llama3.2-1b")
    job["spec"]["initializer"] = {
        "dataset": {
            "storageUri": "hf://a/b",
            "env": [{"name": "X", "value": "1"}],
            "secretRef": {"name": "hf"},
        },
        "model": {"storageUri": "s3://m"},
    }
    info = info_of(job, runtime_doc("torchtune-llama3.2-1b"))
    dataset = info.pod_set("dataset-initializer").container("dataset-initializer")  # type: ignore[union-attr]
    assert dataset["env"] == [
        {"name": "STORAGE_URI", "value": "hf://a/b"},
        {"name": "X", "value": "1"},
    ]
    assert dataset["envFrom"] == [{"secretRef": {"name": "hf"}}]
    model = info.pod_set("model-initializer").container("model-initializer")  # type: ignore[union-attr]
    assert model["env"] == [{"name": "STORAGE_URI", "value": "s3://m"}]


def test_endpoints_follow_jobset_pod_names() -> None:
    info = info_of(make_job(), runtime_doc("torch-distributed"))
    node = info.pod_set("node")
    assert node is not None
    node.count = 3
    assert list(node.endpoints("alpha", info.subdomain)) == [
        "alpha-node-0-0.alpha",
        "alpha-node-0-1.alpha",
        "alpha-node-0-2.alpha",
    ]


def test_runtime_without_replicated_jobs_is_a_build_error() -> None:
    with pytest.raises(BuildError, match="replicatedJobs"):
        info_of(make_job(runtime="custom"), make_runtime({"torch": {}}, []))


def test_runtime_info_does_not_change_its_inputs() -> None:
    job, runtime = as_job(make_job(numNodes=2)), as_runtime(runtime_doc("torch-distributed"))
    before = (repr(job), repr(runtime))
    info = info_of(job, runtime)
    info.trainer_container()["env"] = [{"name": "X", "value": "1"}]  # type: ignore[index]
    assert (repr(job), repr(runtime)) == before
