"""The Kubernetes optimizer: an OptimizationJob (upstream's CRD, not a Katib Experiment) that
the operator's controller reconciles into trial TrainJobs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from typing import Any, cast

from trainer_api import OPTIMIZATION_JOB_LABEL, PARAMETERS_ANNOTATION, parameter_env_name, parse
from trainer_api import OptimizationJob as ApiOptimizationJob
from trainer_search import PRUNED_ANNOTATION, study_from_job, trial_steps, value_types

from trainer_sdk import types
from trainer_sdk.backends.kubernetes.backend import KubernetesBackend
from trainer_sdk.configs import KubernetesBackendConfig
from trainer_sdk.manifests.trainjobs import build_trainjob_manifest, command_for_function
from trainer_sdk.optimizer.backends.base import OptimizerBackend
from trainer_sdk.optimizer.backends.local import new_name
from trainer_sdk.optimizer.constants import constants
from trainer_sdk.optimizer.objective import observe
from trainer_sdk.optimizer.spec import Definition, definition_of, optimization_job
from trainer_sdk.optimizer.types.algorithm_types import (
    BaseAlgorithm,
    BaseEarlyStopping,
    RandomSearch,
)
from trainer_sdk.optimizer.types.optimization_types import (
    Objective,
    OptimizationJob,
    Trial,
    TrialConfig,
)
from trainer_sdk.optimizer.types.search_types import CategoricalSearchSpace, ContinuousSearchSpace

__all__ = ["KubernetesOptimizerBackend", "job_status"]

_ORDER = (
    constants.OPTIMIZATION_JOB_FAILED,
    constants.OPTIMIZATION_JOB_COMPLETE,
    constants.OPTIMIZATION_JOB_RUNNING,
    constants.OPTIMIZATION_JOB_CREATED,
)


def job_status(document: dict[str, Any]) -> str:
    """The SDK status of an OptimizationJob: its most advanced condition that is True."""
    true = {
        c.get("type")
        for c in (document.get("status") or {}).get("conditions") or []
        if c.get("status") == "True"
    }
    return next((status for status in _ORDER if status in true), constants.OPTIMIZATION_JOB_CREATED)


class KubernetesOptimizerBackend(OptimizerBackend):
    """OptimizationJobs in a cluster running this project's operator."""

    def __init__(self, config: KubernetesBackendConfig) -> None:
        self.trainer = KubernetesBackend(config)
        self.namespace = self.trainer.namespace
        self.custom = self.trainer.custom

    def optimize(
        self,
        trial_template: types.TrainJobTemplate,
        *,
        search_space: dict[str, ContinuousSearchSpace | CategoricalSearchSpace],
        trial_config: TrialConfig | None = None,
        objectives: list[Objective] | None = None,
        algorithm: BaseAlgorithm | None = None,
        early_stopping: BaseEarlyStopping | None = None,
    ) -> str:
        if not search_space:
            raise ValueError("Search space must be set.")
        runtime = self.trainer.resolve_runtime(trial_template.runtime)
        name = new_name()
        trainjob = build_trainjob_manifest(
            name, runtime, trial_template.trainer, trial_template.initializer, (), self.trainer
        )
        definition = Definition(
            dict(search_space),
            list(objectives or [Objective()]),
            algorithm or RandomSearch(),
            trial_config or TrialConfig(),
            early_stopping,
        )
        job = optimization_job(name, definition, {"spec": trainjob["spec"]}, self.namespace)
        document = job.to_dict()
        trainer = trial_template.trainer
        if isinstance(trainer, types.CustomTrainer):
            # KEP-3562 hands a trial its parameters as KUBEFLOW_TRAINER_OPT_<NAME> env; the
            # function reads them as keyword arguments, typed as the local backend passes them.
            env_args = {
                parameter: (parameter_env_name(parameter), kind)
                for parameter, kind in value_types(study_from_job(job).space).items()
            }
            document["spec"]["trainJobTemplate"]["spec"]["trainer"]["command"] = (
                command_for_function(
                    runtime,
                    trainer.func,
                    trainer.func_args,
                    trainer.pip_index_urls,
                    trainer.packages_to_install,
                    env_args,
                )
            )
        try:
            self.custom.create_namespaced_custom_object(
                constants.GROUP,
                constants.VERSION,
                self.namespace,
                constants.OPTIMIZATION_JOB_PLURAL,
                document,
            )
        except Exception as error:
            raise RuntimeError(
                f"Failed to create {constants.OPTIMIZATION_JOB_KIND}: {self.namespace}/{name}"
            ) from error
        return name

    def submit(self, manifest: dict[str, Any]) -> str:
        """Create an OptimizationJob from its manifest; returns its name."""
        document = dict(manifest)
        metadata = {**(document.get("metadata") or {})}
        metadata.setdefault("name", new_name())
        metadata.setdefault("namespace", self.namespace)
        document["metadata"] = metadata
        self.custom.create_namespaced_custom_object(
            constants.GROUP,
            constants.VERSION,
            metadata["namespace"],
            constants.OPTIMIZATION_JOB_PLURAL,
            document,
        )
        return str(metadata["name"])

    def _document(self, name: str) -> dict[str, Any]:
        try:
            found = self.custom.get_namespaced_custom_object(
                constants.GROUP,
                constants.VERSION,
                self.namespace,
                constants.OPTIMIZATION_JOB_PLURAL,
                name,
            )
        except Exception as error:
            raise RuntimeError(
                f"Failed to get {constants.OPTIMIZATION_JOB_KIND}: {self.namespace}/{name}"
            ) from error
        return cast(dict[str, Any], found)

    def _view(self, document: dict[str, Any]) -> OptimizationJob:
        job = parse(document)
        assert isinstance(job, ApiOptimizationJob)
        definition = definition_of(job)
        name = str(document["metadata"]["name"])
        return OptimizationJob(
            name=name,
            search_space=definition.search_space,
            objectives=definition.objectives,
            algorithm=definition.algorithm,
            trial_config=definition.trial_config,
            trials=self._trials(name, [o.metric for o in definition.objectives]),
            creation_timestamp=datetime.fromisoformat(
                str(document["metadata"].get("creationTimestamp", "1970-01-01T00:00:00Z")).replace(
                    "Z", "+00:00"
                )
            ),
            status=job_status(document),
        )

    def _trials(self, name: str, metrics: list[str]) -> list[Trial]:
        trials = []
        for item in self._trial_items(name):
            trainjob = self.trainer.get_job(item["metadata"]["name"])
            reported = trainjob.trainer_status.metrics if trainjob.trainer_status else {}
            observation = observe([], [], reported, metrics)
            annotations = item["metadata"].get("annotations") or {}
            pruned = annotations.get(PRUNED_ANNOTATION)
            trials.append(
                Trial(
                    name=trainjob.name,
                    parameters=json.loads(annotations.get(PARAMETERS_ANNOTATION, "{}")),
                    trainjob=trainjob,
                    metrics=observation.summary(metrics),
                    objective=observation.latest(metrics[0]),
                    pruned_at_step=int(pruned) if pruned is not None else None,
                )
            )
        return sorted(trials, key=lambda trial: trial.trainjob.creation_timestamp)

    def _trial_items(self, name: str) -> list[dict[str, Any]]:
        listed = self.custom.list_namespaced_custom_object(
            constants.GROUP,
            constants.VERSION,
            self.namespace,
            "trainjobs",
            label_selector=f"{OPTIMIZATION_JOB_LABEL}={name}",
        )
        return list(cast(dict[str, Any], listed).get("items", []))

    def trial_histories(self, name: str) -> dict[str, dict[int, float]]:
        """The objective per step the controller recorded on each trial's annotations."""
        self._document(name)  # a missing job is an error, not an empty history
        return {
            item["metadata"]["name"]: trial_steps(item["metadata"].get("annotations") or {})
            for item in self._trial_items(name)
        }

    def list_jobs(self) -> list[OptimizationJob]:
        listed = self.custom.list_namespaced_custom_object(
            constants.GROUP, constants.VERSION, self.namespace, constants.OPTIMIZATION_JOB_PLURAL
        )
        return [self._view(item) for item in cast(dict[str, Any], listed).get("items", [])]

    def get_job(self, name: str) -> OptimizationJob:
        return self._view(self._document(name))

    def get_job_logs(self, name: str, trial_name: str | None, follow: bool) -> Iterator[str]:
        return self.trainer.get_job_logs(self._best_or_first_trial(name, trial_name), follow=follow)

    def get_job_events(self, name: str) -> list[types.Event]:
        events = [e for t in self.get_job(name).trials for e in self.trainer.get_job_events(t.name)]
        return sorted(events, key=lambda event: event.event_time)

    def delete_job(self, name: str) -> None:
        """Delete the OptimizationJob; its trials go with it (owner references)."""
        try:
            self.custom.delete_namespaced_custom_object(
                constants.GROUP,
                constants.VERSION,
                self.namespace,
                constants.OPTIMIZATION_JOB_PLURAL,
                name,
            )
        except Exception as error:
            raise RuntimeError(
                f"Failed to delete {constants.OPTIMIZATION_JOB_KIND}: {self.namespace}/{name}"
            ) from error
