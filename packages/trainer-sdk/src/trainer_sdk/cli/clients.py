"""The one place the ``trainer`` command chooses its backend: ``--backend`` and ``--root`` of the
group, as a ``TrainerClient`` or an ``OptimizerClient`` (imported only when a command runs); a
caller may hand in its own ``TrainerClient`` (``obj={"client": ...}``: tests do, on an
in-memory backend)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from trainer_sdk.client import TrainerClient
    from trainer_sdk.configs import KubernetesBackendConfig, LocalBackendConfig
    from trainer_sdk.optimizer import OptimizerClient

__all__ = ["backend_config", "optimizer_client", "trainer_client"]


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
    """The client for ``--backend``; local jobs end with this command when ``stop_on_exit``.
    A client the caller passed as ``obj={"client": ...}`` is used as it is (tests)."""
    from trainer_sdk.client import TrainerClient

    given: TrainerClient | None = _options(context).get("client")
    if given is not None:
        return given
    return TrainerClient(
        backend_config(context, **({"stop_on_exit": True} if stop_on_exit else {}))
    )


def optimizer_client(context: click.Context) -> OptimizerClient:
    """The optimizer client for ``--backend`` and ``--root``."""
    from trainer_sdk.optimizer import OptimizerClient

    return OptimizerClient(backend_config(context))
