"""Backend configurations accepted by ``TrainerClient``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "ContainerBackendConfig",
    "KubernetesBackendConfig",
    "LocalBackendConfig",
    "LocalProcessBackendConfig",
    "TrainingRuntimeSource",
    "default_local_root",
]

ROOT_ENV = "TRAINER_SDK_ROOT"


def default_local_root() -> Path:
    """Where local jobs live: ``$TRAINER_SDK_ROOT``, else ``~/.local/share/trainer-sdk/jobs``."""
    if configured := os.environ.get(ROOT_ENV):
        return Path(configured)
    return Path.home() / ".local" / "share" / "trainer-sdk" / "jobs"


class KubernetesBackendConfig(BaseModel):
    """Where the Kubernetes backend sends TrainJobs."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    namespace: str | None = None
    config_file: str | None = None
    context: str | None = None
    client_configuration: Any | None = None


class LocalBackendConfig(BaseModel):
    """The local backend: jobs run as processes on this machine, their state kept under ``root``.

    Jobs outlive the client that started them, as in a cluster; ``delete_job`` (``trainer
    delete``) ends them. ``stop_on_exit=True`` ends this client's jobs when its process exits.
    ``cleanup_venv`` is accepted for compatibility; package directories are a shared cache here.
    A job whose pods request accelerators this machine lacks (``nvidia.com/gpu`` without one) is
    refused; ``accelerators_on_cpu=True`` runs it on CPU instead, with the process count a
    cluster's node would start (one per requested device), never one per CPU core.
    ``packages_to_install`` the job's Python already satisfies are not installed again; one it
    has at another version is refused unless ``isolated_packages=True``, which installs the
    conflicting (and missing) ones apart (``pip install --target``), first on the ranks' path.
    """

    cleanup_venv: bool = True
    root: Path = Field(default_factory=default_local_root)
    stop_on_exit: bool = False
    python: str | None = None
    accelerators_on_cpu: bool = False
    isolated_packages: bool = False


LocalProcessBackendConfig = LocalBackendConfig


class TrainingRuntimeSource(BaseModel):
    """Where upstream's container backend loads runtimes from (URL schemes, in priority order)."""

    sources: list[str] = Field(default_factory=lambda: ["github://kubeflow/trainer"])


class ContainerBackendConfig(BaseModel):
    """Upstream's Docker/Podman backend configuration: importable, but TrainerClient refuses it
    (NotImplementedError) — the local backend runs the same JobSet as processes instead."""

    pull_policy: str = "IfNotPresent"
    auto_remove: bool = True
    container_host: str | None = None
    container_runtime: Literal["docker", "podman"] | None = None
    runtime_source: TrainingRuntimeSource = Field(default_factory=TrainingRuntimeSource)
    dataset_initializer_image: str = "ghcr.io/kubeflow/trainer/dataset-initializer:latest"
    model_initializer_image: str = "ghcr.io/kubeflow/trainer/model-initializer:latest"
    initializer_timeout: int = 600
