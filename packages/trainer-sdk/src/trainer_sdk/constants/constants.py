"""Constants of the Kubeflow Trainer SDK, under the same names (``kubeflow.trainer.constants``)."""

from __future__ import annotations

import os
import textwrap
from typing import Final

__all__ = [
    "API_VERSION",
    "CLUSTER_TRAINING_RUNTIME_KIND",
    "CLUSTER_TRAINING_RUNTIME_PLURAL",
    "CPU_LABEL",
    "DATASET_INITIALIZER",
    "DATASET_PATH",
    "DEFAULT_COMMAND",
    "DEFAULT_FRAMEWORK_IMAGES",
    "DEFAULT_MPI_USER_HOME",
    "DEFAULT_PIP_INDEX_URLS",
    "DEFAULT_TRAINING_RUNTIME",
    "EXEC_FUNC_SCRIPT",
    "GPU_LABEL",
    "GPU_MIG_PREFIX",
    "GROUP",
    "INITIALIZER_DEFAULT_IGNORE_PATTERNS",
    "INITIALIZER_ENV_ACCESS_TOKEN",
    "JOBSET_JOB_INDEX_LABEL",
    "JOBSET_NAME_LABEL",
    "JOBSET_RESTART_ATTEMPT_LABEL",
    "JOBSET_RJOB_NAME_LABEL",
    "JOB_INDEX_LABEL",
    "JOB_NAME_UUID_LENGTH",
    "LAUNCHER",
    "MODEL_INITIALIZER",
    "MODEL_PATH",
    "MPI_COMMAND",
    "NODE",
    "NPU_LABEL",
    "OUTPUT_PATH",
    "PACKAGES_READY_ENV",
    "POD_FAILED",
    "POD_LABEL_SELECTOR",
    "POD_PENDING",
    "POD_RUNNING",
    "POD_SUCCEEDED",
    "RUNTIME_FRAMEWORK_LABEL",
    "RUNTIME_PATCH_MANAGER",
    "TORCH_COMMAND",
    "TORCH_ENV_NUM_PROC_PER_NODE",
    "TORCH_TUNE_COMMAND",
    "TORCH_TUNE_INSTRUCT_DATASET",
    "TPU_LABEL",
    "TRAINING_RUNTIME_KIND",
    "TRAINING_RUNTIME_PLURAL",
    "TRAINJOB_ANCESTOR_LABEL",
    "TRAINJOB_COMPLETE",
    "TRAINJOB_CREATED",
    "TRAINJOB_FAILED",
    "TRAINJOB_KIND",
    "TRAINJOB_PLURAL",
    "TRAINJOB_RUNNING",
    "TRAINJOB_STATUSES",
    "TRAINJOB_STOPPED",
    "TRAINJOB_SUSPENDED",
    "UNKNOWN",
    "VERSION",
    "WORKSPACE_PATH",
]

GROUP: Final = "trainer.kubeflow.org"
VERSION: Final = "v1alpha1"
API_VERSION: Final = f"{GROUP}/{VERSION}"

CLUSTER_TRAINING_RUNTIME_KIND: Final = "ClusterTrainingRuntime"
TRAINING_RUNTIME_KIND: Final = "TrainingRuntime"
CLUSTER_TRAINING_RUNTIME_PLURAL: Final = "clustertrainingruntimes"
TRAINING_RUNTIME_PLURAL: Final = "trainingruntimes"
TRAINJOB_KIND: Final = "TrainJob"
TRAINJOB_PLURAL: Final = "trainjobs"

# TrainJob statuses, as the SDK reports them.
TRAINJOB_CREATED: Final = "Created"
TRAINJOB_RUNNING: Final = "Running"
TRAINJOB_COMPLETE: Final = "Complete"
TRAINJOB_FAILED: Final = "Failed"
TRAINJOB_SUSPENDED: Final = "Suspended"  # spec.suspend: its Suspended condition is True
TRAINJOB_STOPPED: Final = "Stopped"  # Failed with reason Stopped: ended by stop_job or Ctrl-C
TRAINJOB_STATUSES: Final = frozenset(
    {
        TRAINJOB_CREATED,
        TRAINJOB_RUNNING,
        TRAINJOB_COMPLETE,
        TRAINJOB_FAILED,
        TRAINJOB_SUSPENDED,
        TRAINJOB_STOPPED,
    }
)

# Pod phases.
POD_PENDING: Final = "Pending"
POD_RUNNING: Final = "Running"
POD_SUCCEEDED: Final = "Succeeded"
POD_FAILED: Final = "Failed"

UNKNOWN: Final = "Unknown"

TRAINJOB_ANCESTOR_LABEL: Final = "trainer.kubeflow.org/trainjob-ancestor-step"
RUNTIME_FRAMEWORK_LABEL: Final = "trainer.kubeflow.org/framework"

DATASET_INITIALIZER: Final = "dataset-initializer"
MODEL_INITIALIZER: Final = "model-initializer"
INITIALIZER_ENV_ACCESS_TOKEN: Final = "ACCESS_TOKEN"
INITIALIZER_DEFAULT_IGNORE_PATTERNS: Final = ["*.msgpack", "*.h5", "*.bin", "*.pt", "*.pth"]

WORKSPACE_PATH: Final = "/workspace"
DATASET_PATH: Final = os.path.join(WORKSPACE_PATH, "dataset")
MODEL_PATH: Final = os.path.join(WORKSPACE_PATH, "model")
# Where a BuiltinTrainer's engine writes the fine-tuned model (model/, adapter/) in its pods.
OUTPUT_PATH: Final = os.path.join(WORKSPACE_PATH, "output")

LAUNCHER: Final = "launcher"
NODE: Final = "node"

CPU_LABEL: Final = "cpu"
GPU_LABEL: Final = "nvidia.com/gpu"
GPU_MIG_PREFIX: Final = "nvidia.com/mig-"
TPU_LABEL: Final = "google.com/tpu"
NPU_LABEL: Final = "huawei.com/Ascend910"

JOBSET_NAME_LABEL: Final = "jobset.sigs.k8s.io/jobset-name"
JOBSET_RJOB_NAME_LABEL: Final = "jobset.sigs.k8s.io/replicatedjob-name"
JOB_INDEX_LABEL: Final = "batch.kubernetes.io/job-completion-index"
"""Upstream's name: the Job completion index (the pod's index within its Job)."""
JOBSET_JOB_INDEX_LABEL: Final = "jobset.sigs.k8s.io/job-index"
"""The index of a pod's Job among its replicated job's Jobs."""
JOBSET_RESTART_ATTEMPT_LABEL: Final = "jobset.sigs.k8s.io/restart-attempt"
"""Which restart of its JobSet a pod belongs to (0 for the first run)."""

PACKAGES_READY_ENV: Final = "TRAINER_SDK_PACKAGES_READY"
"""Set by the local backend when it has installed packages_to_install already (on the path):
the container command then installs nothing."""

POD_LABEL_SELECTOR: Final = (
    f"{JOBSET_NAME_LABEL}={{trainjob_name}},{JOBSET_RJOB_NAME_LABEL} "
    f"in ({DATASET_INITIALIZER}, {MODEL_INITIALIZER}, {LAUNCHER}, {NODE})"
)

DEFAULT_PIP_INDEX_URLS: Final = os.getenv(
    "DEFAULT_PIP_INDEX_URLS", "https://pypi.org/simple"
).split(",")

# The script that writes the training code and the rank entrypoint (``rank_entrypoint.py``) to
# files and runs the entrypoint on the code. Both arrive base64-encoded inside single quotes, so no
# content of the code can end the script; each file is written under a temporary name and renamed,
# so ranks that share a directory never read a half-written file. Paths are shell-quoted.
EXEC_FUNC_SCRIPT: Final = textwrap.dedent(
    """
    write() {{ printf %s "$2" | base64 -d > "$1.$$.tmp" && mv -f "$1.$$.tmp" "$1"; }}
    write {func_file} '{func_code}' || exit 1
    write {rank_file} '{rank_code}' || exit 1
    __ENTRYPOINT__ {rank_file} {func_file}"""
)
DEFAULT_COMMAND: Final = ("bash", "-c", EXEC_FUNC_SCRIPT.replace("__ENTRYPOINT__", "python"))
DEFAULT_MPI_USER_HOME: Final = os.getenv("DEFAULT_MPI_USER_HOME", "/home/mpiuser")
MPI_COMMAND: Final = ("mpirun", "--hostfile", "/etc/mpi/hostfile", *DEFAULT_COMMAND)
TORCH_COMMAND: Final = ("bash", "-c", EXEC_FUNC_SCRIPT.replace("__ENTRYPOINT__", "torchrun"))
TORCH_ENV_NUM_PROC_PER_NODE: Final = "PET_NPROC_PER_NODE"
TORCH_TUNE_COMMAND: Final = ("tune", "run")
TORCH_TUNE_INSTRUCT_DATASET: Final = "torchtune.datasets.instruct_dataset"

DEFAULT_TRAINING_RUNTIME: Final = os.getenv("DEFAULT_TRAINING_RUNTIME", "torch-distributed")
DEFAULT_FRAMEWORK_IMAGES: Final = {"torch": "pytorch/pytorch:2.7.1-cuda12.8-cudnn9-runtime"}
JOB_NAME_UUID_LENGTH: Final = 11
RUNTIME_PATCH_MANAGER: Final = "trainer.kubeflow.org/kubeflow-sdk"
