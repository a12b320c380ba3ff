"""``TrainerClient``: the SDK's one entry point, the same calls on every backend."""

from __future__ import annotations

import copy
import functools
import logging
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainer_sdk import constants, types
from trainer_sdk.backends.base import AnyTrainer, PackageSet, RuntimeBackend, Volume
from trainer_sdk.configs import ContainerBackendConfig, KubernetesBackendConfig, LocalBackendConfig
from trainer_sdk.training.metrics import MetricPoint

if TYPE_CHECKING:  # options load the API models: reading jobs (trainer list) needs neither
    from trainer_sdk.options import Option

__all__ = ["PackageSet", "TrainerClient", "Volume", "select_backend_config"]

_logger = logging.getLogger(__name__)

BackendConfig = KubernetesBackendConfig | LocalBackendConfig


@functools.cache
def _log_choice(kind: str, reason: str) -> None:
    """Log the automatic backend choice once per process."""
    _logger.info("TrainerClient: using the %s backend (%s)", kind, reason)


def select_backend_config() -> BackendConfig:
    """Kubernetes when kubectl would find a cluster (``trainer_api.kubeconfig``: $KUBECONFIG,
    ~/.kube/config, in-cluster), otherwise the local backend."""
    from trainer_api.kubeconfig import KubeconfigError, find_connection

    try:
        found = find_connection()
    except KubeconfigError as error:  # the Kubernetes backend reports it
        _log_choice("Kubernetes", str(error))
        return KubernetesBackendConfig()
    if found is None:
        _log_choice("local", "no kubeconfig or in-cluster config found")
        return LocalBackendConfig()
    _log_choice("Kubernetes", found.source)
    return KubernetesBackendConfig()


class TrainerClient:
    """Create, watch and delete TrainJobs, like ``kubeflow.trainer.TrainerClient``.

    ``backend``: a backend object to use instead of one made from a configuration (tests pass
    ``trainer_sdk.backends.memory.InMemoryBackend``, as httpx's tests pass a mock transport)."""

    def __init__(
        self, backend_config: BackendConfig | None = None, *, backend: RuntimeBackend | None = None
    ) -> None:
        self.backend: RuntimeBackend
        if backend is not None:
            if backend_config is not None:
                raise ValueError("give backend_config or backend, not both")
            self.backend = backend
            return
        config = backend_config if backend_config is not None else select_backend_config()
        if isinstance(config, KubernetesBackendConfig):
            from trainer_sdk.backends.kubernetes.backend import KubernetesBackend

            self.backend = KubernetesBackend(config)
        elif isinstance(config, ContainerBackendConfig):
            raise NotImplementedError(
                "backend_config: the container (Docker/Podman) backend is not provided; "
                "LocalBackendConfig runs the same JobSet as local processes"
            )
        elif isinstance(config, LocalBackendConfig):
            from trainer_sdk.backends.local.backend import LocalBackend

            self.backend = LocalBackend(config)
        else:
            raise ValueError(
                f"backend_config: expected KubernetesBackendConfig or LocalBackendConfig, "
                f"got {config!r}"
            )

    def list_runtimes(self) -> list[types.Runtime]:
        """The training runtimes jobs can use."""
        return self.backend.list_runtimes()

    def get_runtime(self, name: str) -> types.Runtime:
        """The runtime called ``name``; RuntimeNotFoundError lists the others."""
        return self.backend.get_runtime(name=name)

    def get_runtime_packages(self, runtime: types.Runtime) -> list[str] | None:
        """The runtime's packages: locally the list upstream's local backend returns (e.g.
        ``["torch"]``), without listing the whole environment."""
        return self.backend.get_runtime_packages(runtime=runtime)

    def train(
        self,
        runtime: str | types.Runtime | None = None,
        initializer: types.Initializer | None = None,
        trainer: AnyTrainer | None = None,
        options: Sequence[Option] | None = None,
    ) -> str:
        """Create a TrainJob on ``runtime`` (a name or a Runtime; None: torch-distributed);
        returns its name."""
        return self.backend.train(
            runtime=runtime, initializer=initializer, trainer=trainer, options=options
        )

    def list_jobs(self, runtime: types.Runtime | None = None) -> list[types.TrainJob]:
        """Every TrainJob, or those of ``runtime``, oldest first."""
        return self.backend.list_jobs(runtime=runtime)

    def get_job(self, name: str) -> types.TrainJob:
        """The TrainJob called ``name``; JobNotFoundError when there is none."""
        return self.backend.get_job(name=name)

    def get_job_logs(
        self, name: str, step: str = constants.NODE + "-0", follow: bool = False
    ) -> Iterator[str]:
        """Log lines of one step; with ``follow``, lines as they are written until the job ends."""
        return self.backend.get_job_logs(name=name, step=step, follow=follow)

    def get_job_events(self, name: str) -> list[types.Event]:
        """Events of the TrainJob and its pods."""
        return self.backend.get_job_events(name=name)

    def get_job_metrics(self, name: str) -> list[MetricPoint]:
        """What the job's code recorded with ``log_metrics``, by step: the whole history on the
        local backend, the latest values a cluster's TrainJob status carries."""
        return self.backend.get_job_metrics(name=name)

    def wait_for_job_status(
        self,
        name: str,
        status: set[str] = {constants.TRAINJOB_COMPLETE},  # noqa: B006 - upstream's signature
        timeout: int = 600,
        polling_interval: int = 2,
        callbacks: list[Callable[[types.TrainJob], None]] | None = None,
    ) -> types.TrainJob:
        """Wait for one of ``status``; RuntimeError (JobFailedError) as soon as the job fails.

        ``callbacks`` each get the TrainJob after every polling interval, as upstream's do."""
        return self.backend.wait_for_job_status(
            name=name,
            status=status,
            timeout=timeout,
            polling_interval=polling_interval,
            callbacks=callbacks,
        )

    def delete_job(self, name: str) -> None:
        """Delete the TrainJob; locally this ends its whole process tree."""
        return self.backend.delete_job(name=name)

    def suspend_job(self, name: str) -> None:
        """Suspend the TrainJob (``spec.suspend: true``): its pods get SIGTERM, so training code
        using ``trainer_sdk.checkpoint`` saves at the next step and exits; ``resume_job`` goes on
        from that checkpoint."""
        self.backend.suspend_job(name, True)

    def resume_job(self, name: str) -> None:
        """Resume a suspended TrainJob (``spec.suspend: false``)."""
        self.backend.suspend_job(name, False)

    def stop_job(self, name: str) -> None:
        """End the job's processes and keep it, Stopped, with its logs and metrics (locally; a
        cluster backend raises TrainerError: delete the job instead)."""
        self.backend.stop_job(name)

    def submit(
        self,
        manifest: dict[str, Any],
        runtime: dict[str, Any] | None = None,
        options: Sequence[Option] = (),
    ) -> str:
        """Create a TrainJob from a manifest dict (as ``trainer run -f`` does); returns its name.

        ``runtime``: the manifest of the runtime it references, when that is not installed.
        ``options`` edit a copy of ``manifest`` first, as they edit what ``train`` builds."""
        if options:
            manifest = copy.deepcopy(manifest)
            for option in options:
                option(manifest, None, self.backend)
        return self.backend.submit(manifest, runtime)

    def list_volumes(self) -> list[Volume]:
        """The persistent volume claims kept beside the jobs (locally: ``trainer volumes``;
        a cluster's are PersistentVolumeClaims, TrainerError: use kubectl)."""
        return self.backend.list_volumes()

    def delete_volume(self, namespace: str, claim: str) -> Path:
        """Delete a claim's data; RuntimeError while a running job mounts it."""
        return self.backend.delete_volume(namespace, claim)

    def list_package_sets(self) -> list[PackageSet]:
        """The ``packages_to_install`` sets installed for local jobs, most recently used first."""
        return self.backend.list_package_sets()

    def prune_package_sets(self, older_than_seconds: float = 0.0) -> list[PackageSet]:
        """Remove the installed sets no job used for ``older_than_seconds``; those removed."""
        return self.backend.prune_package_sets(older_than_seconds)

    def get_runtime_manifest(self, name: str) -> dict[str, Any]:
        """The manifest of the runtime called ``name``; RuntimeNotFoundError lists the others."""
        return self.backend.get_runtime_manifest(name)

    def apply_runtime(self, manifest: dict[str, Any]) -> bool:
        """Create or update a TrainingRuntime or ClusterTrainingRuntime (``trainer apply``);
        True when it was created. Locally only: on a cluster, kubectl applies runtimes."""
        return self.backend.apply_runtime(manifest)

    def delete_runtime(self, name: str, kind: str | None = None) -> str:
        """Delete the applied runtime ``name`` (of ``kind`` when both kinds have it); its kind.
        KeyError when it was never applied, ValueError for a built-in runtime."""
        return self.backend.delete_runtime(name, kind)
