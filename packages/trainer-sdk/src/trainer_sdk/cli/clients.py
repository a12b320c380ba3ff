"""The one place the ``trainer`` command chooses its backend: ``--backend`` and ``--root`` of the
group, as a ``TrainerClient`` or an ``OptimizerClient`` (imported only when a command runs)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from trainer_sdk.client import TrainerClient
    from trainer_sdk.configs import KubernetesBackendConfig, LocalBackendConfig
    from trainer_sdk.optimizer import OptimizerClient

__all__ = ["backend_config", "local_root", "optimizer_client", "trainer_client"]


def _options(context: click.Context) -> dict[str, Any]:
    return context.find_root().obj or {"backend": "auto", "local": {}}


def backend_config(
    context: click.Context, **local: Any
) -> KubernetesBackendConfig | LocalBackendConfig:
    """The backend ``--backend`` names (auto: Kubernetes when a kubeconfig is found, unless
    ``--root`` was given); ``local`` adds LocalBackendConfig fields."""
    from trainer_sdk.client import select_backend_config
    from trainer_sdk.configs import KubernetesBackendConfig, LocalBackendConfig

    options = _options(context)
    backend = options["backend"]
    if backend == "auto":
        chosen = LocalBackendConfig if options["local"] else type(select_backend_config())
        backend = "kubernetes" if chosen is KubernetesBackendConfig else "local"
    if backend == "kubernetes":
        return KubernetesBackendConfig()
    return LocalBackendConfig(**{**options["local"], **local})


def trainer_client(context: click.Context, stop_on_exit: bool = False) -> TrainerClient:
    """The client for ``--backend``; local jobs end with this command when ``stop_on_exit``."""
    from trainer_sdk.client import TrainerClient

    return TrainerClient(
        backend_config(context, **({"stop_on_exit": True} if stop_on_exit else {}))
    )


def optimizer_client(context: click.Context) -> OptimizerClient:
    """The optimizer client for ``--backend`` and ``--root``."""
    from trainer_sdk.optimizer import OptimizerClient

    return OptimizerClient(backend_config(context))


def local_root(context: click.Context) -> Path:
    """The local backend's root: ``trainer --root``, else its default."""
    from trainer_sdk.configs import default_local_root

    root = _options(context)["local"].get("root")
    return Path(root) if root else default_local_root()
