"""Backend configurations accepted by ``TrainerClient``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "KubernetesBackendConfig",
    "LocalBackendConfig",
    "LocalProcessBackendConfig",
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

    ``detach``: jobs keep running after the client exits (default: they are ended with it).
    ``cleanup_venv`` is accepted for compatibility; package directories are a shared cache here.
    """

    root: Path = Field(default_factory=default_local_root)
    detach: bool = False
    cleanup_venv: bool = True
    python: str | None = None


LocalProcessBackendConfig = LocalBackendConfig


class ContainerBackendConfig(BaseModel):
    """Upstream's Docker/Podman backend configuration: importable, but TrainerClient refuses it
    (NotImplementedError) — the local backend runs the same JobSet as processes instead."""

    model_config = ConfigDict(extra="allow")
