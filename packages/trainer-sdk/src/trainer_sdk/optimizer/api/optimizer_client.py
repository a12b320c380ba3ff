"""``OptimizerClient``: hyperparameter optimization, call-compatible with ``kubeflow.optimizer``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from trainer_sdk import types
from trainer_sdk.client import select_backend_config
from trainer_sdk.configs import KubernetesBackendConfig, LocalBackendConfig
from trainer_sdk.optimizer.backends.base import OptimizerBackend
from trainer_sdk.optimizer.constants import constants
from trainer_sdk.optimizer.spec import Definition
from trainer_sdk.optimizer.types.algorithm_types import BaseAlgorithm, BaseEarlyStopping
from trainer_sdk.optimizer.types.optimization_types import (
    Objective,
    OptimizationJob,
    Result,
    TrialConfig,
)

__all__ = ["OptimizerClient"]


class OptimizerClient:
    """Create and watch optimization jobs: trials are TrainJobs, locally or in a cluster."""

    def __init__(
        self, backend_config: KubernetesBackendConfig | LocalBackendConfig | None = None
    ) -> None:
        config = backend_config if backend_config is not None else select_backend_config()
        self.backend: OptimizerBackend
        if isinstance(config, KubernetesBackendConfig):
            from trainer_sdk.optimizer.backends.kubernetes import KubernetesOptimizerBackend

            self.backend = KubernetesOptimizerBackend(config)
        elif isinstance(config, LocalBackendConfig):
            from trainer_sdk.optimizer.backends.local import LocalOptimizerBackend

            self.backend = LocalOptimizerBackend(config)
        else:
            raise ValueError(f"Invalid backend config '{config}'")

    def optimize(
        self,
        trial_template: types.TrainJobTemplate,
        *,
        trial_config: TrialConfig | None = None,
        search_space: dict[str, Any],
        objectives: list[Objective] | None = None,
        algorithm: BaseAlgorithm | None = None,
        early_stopping: BaseEarlyStopping | None = None,
        warm_start: str | None = None,
    ) -> str:
        """Start an optimization job; returns its name. Each trial runs ``trial_template`` with
        its parameters added to ``func_args`` (and as ``KUBEFLOW_TRAINER_OPT_<NAME>`` env).
        ``warm_start`` (beyond upstream): an earlier job whose finished trials seed the search
        (they count for the sampler, not towards ``num_trials``)."""
        definition = Definition.requested(
            search_space, trial_config, objectives, algorithm, early_stopping, warm_start
        )
        return self.backend.optimize(trial_template, definition)

    def list_jobs(self) -> list[OptimizationJob]:
        """Every optimization job, oldest first."""
        return self.backend.list_jobs()

    def get_job(self, name: str) -> OptimizationJob:
        """The optimization job ``name`` with its trials."""
        return self.backend.get_job(name=name)

    def get_job_logs(
        self, name: str, trial_name: str | None = None, follow: bool = False
    ) -> Iterator[str]:
        """Log lines of ``trial_name``, else of the best trial so far, else of the first."""
        return self.backend.get_job_logs(name=name, trial_name=trial_name, follow=follow)

    def get_best_results(self, name: str) -> Result | None:
        """The best trial's parameters and metrics, or None while no trial has finished."""
        return self.backend.get_best_results(name=name)

    def wait_for_job_status(
        self,
        name: str,
        status: set[str] = {constants.OPTIMIZATION_JOB_COMPLETE},  # noqa: B006 - upstream's
        timeout: int = 3600,
        polling_interval: int = 2,
        callbacks: list[Callable[[OptimizationJob], None]] | None = None,
    ) -> OptimizationJob:
        """Wait for one of ``status``; RuntimeError when the job fails, TimeoutError."""
        return self.backend.wait_for_job_status(
            name=name,
            status=status,
            timeout=timeout,
            polling_interval=polling_interval,
            callbacks=callbacks,
        )

    def submit(self, manifest: dict[str, Any]) -> str:
        """Start an OptimizationJob from its manifest (upstream's schema, as ``trainer optimize
        FILE.yaml`` reads it); returns its name."""
        return self.backend.submit(manifest)

    def resume_job(self, name: str) -> None:
        """Go on with a local optimization job whose driving process ended (killed, or the
        machine restarted): its finished and running trials are kept, none is run twice. A
        cluster's controller resumes by itself."""
        self.backend.resume_job(name)

    def delete_job(self, name: str) -> None:
        """Delete the optimization job and its trials."""
        return self.backend.delete_job(name=name)

    def get_job_events(self, name: str) -> list[types.Event]:
        """Events of the job's trials."""
        return self.backend.get_job_events(name=name)
