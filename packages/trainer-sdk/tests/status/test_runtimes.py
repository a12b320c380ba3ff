"""Runtime manifests as the SDK's Runtime."""

from __future__ import annotations

from typing import Any

from trainer_sdk import TrainerType, constants
from trainer_sdk.status.runtimes import runtime_from_manifest


def test_upstream_torch_distributed_runtime(upstream_runtime_manifest: dict[str, Any]) -> None:
    runtime = runtime_from_manifest(upstream_runtime_manifest)
    assert runtime.name == "torch-distributed"
    assert runtime.trainer.framework == "torch"
    assert runtime.trainer.trainer_type == TrainerType.CUSTOM_TRAINER
    assert runtime.trainer.command == constants.TORCH_COMMAND
    assert runtime.trainer.image.startswith("pytorch/pytorch:")


def test_devices_multiply_by_nodes_and_mpi_uses_slots() -> None:
    manifest = {
        "kind": "TrainingRuntime",
        "metadata": {"name": "mpi", "labels": {constants.RUNTIME_FRAMEWORK_LABEL: "mpi"}},
        "spec": {
            "mlPolicy": {"numNodes": 3, "mpi": {"numProcPerNode": 2}},
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": "node",
                            "template": {
                                "metadata": {
                                    "labels": {constants.TRAINJOB_ANCESTOR_LABEL: "trainer"}
                                },
                                "spec": {
                                    "template": {
                                        "spec": {
                                            "containers": [
                                                {
                                                    "name": "node",
                                                    "image": "i",
                                                    "resources": {"limits": {"nvidia.com/gpu": 4}},
                                                }
                                            ]
                                        }
                                    }
                                },
                            },
                        }
                    ]
                }
            },
        },
    }
    runtime = runtime_from_manifest(manifest)
    assert (runtime.trainer.device, runtime.trainer.device_count, runtime.trainer.num_nodes) == (
        "gpu",
        "6",
        3,
    )
    assert runtime.trainer.command == constants.MPI_COMMAND
    assert runtime.kind.value == "TrainingRuntime"
