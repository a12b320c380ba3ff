"""The Kubernetes optimizer: an OptimizationJob (upstream's CRD, not a Katib Experiment) that
the operator's controller reconciles into trial TrainJobs."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any, cast

from trainer_api import OPTIMIZATION_JOB_LABEL, parse
from trainer_api import OptimizationJob as ApiOptimizationJob
from trainer_search import (
    assignment_strings,
    job_message,
    job_phase,
    observe_trainjob,
    trial_record,
    trial_steps,
)

from trainer_sdk import types
from trainer_sdk.backends.kubernetes.backend import KubernetesBackend
from trainer_sdk.configs import KubernetesBackendConfig
from trainer_sdk.optimizer.backends.base import OptimizerBackend
from trainer_sdk.optimizer.constants import constants
from trainer_sdk.optimizer.objective import observe
from trainer_sdk.optimizer.spec import Definition, definition_of, new_name, requested_job
from trainer_sdk.optimizer.types.optimization_types import OptimizationJob, Trial

__all__ = ["KubernetesOptimizerBackend"]


class KubernetesOptimizerBackend(OptimizerBackend):
    """OptimizationJobs in a cluster running this project's operator."""

    def __init__(self, config: KubernetesBackendConfig) -> None:
        self.trainer = KubernetesBackend(config)
        self.namespace = self.trainer.namespace
        self.custom = self.trainer.custom

    def optimize(self, trial_template: types.TrainJobTemplate, definition: Definition) -> str:
        name = new_name()
        job = requested_job(self.trainer, name, trial_template, definition, self.namespace)
        try:
            self.custom.create_namespaced_custom_object(
                constants.GROUP,
                constants.VERSION,
                self.namespace,
                constants.OPTIMIZATION_JOB_PLURAL,
                job.to_dict(),
            )
        except Exception as error:
            raise RuntimeError(
                f"Failed to create {constants.OPTIMIZATION_JOB_KIND}: {self.namespace}/{name}"
            ) from error
        return name

    def resume_job(self, name: str) -> None:
        """Nothing to do: the controller drives every OptimizationJob, and a restarted one goes
        on from the trials' annotations. RuntimeError when there is no such job."""
        self._document(name)

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
        status = document.get("status") or {}
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
            status=job_phase(status),
            best_trial_name=(status.get("result") or {}).get("trainJobName"),
            message=job_message(status),
        )

    def _trials(self, name: str, metrics: list[str]) -> list[Trial]:
        trials = []
        for item in self._trial_items(name):
            trainjob = self.trainer.get_job(item["metadata"]["name"])
            record, _ = trial_record(observe_trainjob(item, metrics[0]))
            reported = trainjob.trainer_status.metrics if trainjob.trainer_status else {}
            trials.append(
                Trial(
                    name=trainjob.name,
                    parameters=assignment_strings(record.parameters),
                    trainjob=trainjob,
                    metrics=observe([], [], reported, metrics).summary(metrics),
                    objective=record.objective,
                    pruned_at_step=record.pruned_at_step,
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
