"""The local optimizer: trials are local TrainJobs, driven by a thread of the calling process.

The driver asks the search core for as many trials as there are free slots
(``parallel_trials``, at most the machine's CPU count), starts them with ``TrainerClient``,
reads each one's objective as it reports it, stops those the early-stopping rule prunes,
and writes the job's state to ``<root>/.optimizations/<name>.json`` after every change, so
other processes (``trainer get optimizationjob``) see it. Jobs end with the process that
started them: ``wait_for_job_status`` (or ``trainer optimize``) keeps it alive.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import logging
import os
import random
import string
import threading
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Final

from trainer_api import (
    OPTIMIZATION_JOB_LABEL,
    PARAMETERS_ANNOTATION,
    apply_defaults,
    parameter_env_name,
    parse,
    validate,
)
from trainer_api import (
    OptimizationJob as ApiOptimizationJob,
)
from trainer_search import (
    Study,
    TrialRecord,
    assignment_strings,
    check_pruning,
    study_from_job,
    suggest,
    trial_trainjob,
)

from trainer_sdk import constants as trainer_constants
from trainer_sdk import types
from trainer_sdk.backends.local.backend import LocalBackend
from trainer_sdk.backends.local.jobdir import write_json
from trainer_sdk.client import TrainerClient
from trainer_sdk.configs import LocalBackendConfig
from trainer_sdk.errors import JobNotFoundError
from trainer_sdk.optimizer.backends.base import OptimizerBackend
from trainer_sdk.optimizer.constants import constants
from trainer_sdk.optimizer.objective import Observation, observe
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
from trainer_sdk.options import Annotations, Labels, Name

__all__ = ["LocalOptimizerBackend", "new_name"]

_logger = logging.getLogger(__name__)

POLL_SECONDS: Final = 0.2
"""How often the driver looks at its running trials."""
STATE_DIR: Final = ".optimizations"


def new_name() -> str:
    """A name like upstream's: a letter and 11 hex digits."""
    return random.choice(string.ascii_lowercase) + os.urandom(6).hex()[:11]


class LocalOptimizerBackend(OptimizerBackend):
    """Optimization jobs whose trials run on this machine."""

    def __init__(self, config: LocalBackendConfig) -> None:
        self.trainer = TrainerClient(config)
        self.directory = config.root / STATE_DIR
        self._drivers: dict[str, _Driver] = {}

    def _path(self, name: str) -> Path:
        return self.directory / f"{name}.json"

    def _read(self, name: str) -> dict[str, Any]:
        try:
            document: dict[str, Any] = json.loads(self._path(name).read_text())
        except FileNotFoundError:
            raise RuntimeError(f"{constants.OPTIMIZATION_JOB_KIND} {name} not found") from None
        return document

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
        if not isinstance(trial_template.trainer, types.CustomTrainer):
            raise ValueError("trial_template.trainer: expected a CustomTrainer")
        runtime = self.trainer.backend.resolve_runtime(trial_template.runtime)
        definition = Definition(
            dict(search_space),
            list(objectives or [Objective()]),
            algorithm or RandomSearch(),
            trial_config or TrialConfig(),
            early_stopping,
        )
        template = {"spec": {"runtimeRef": {"name": runtime.name, "kind": runtime.kind.value}}}
        job = optimization_job(new_name(), definition, template)
        return self._start(job, dataclasses.replace(trial_template, runtime=runtime))

    def submit(self, manifest: dict[str, Any]) -> str:
        """Run an OptimizationJob manifest (upstream's schema): each trial is its
        ``trainJobTemplate`` with the parameters in ``KUBEFLOW_TRAINER_OPT_<NAME>`` env."""
        document = copy.deepcopy(manifest)
        document.setdefault("metadata", {}).setdefault("name", new_name())
        job = apply_defaults(parse(document))
        if not isinstance(job, ApiOptimizationJob):
            raise ValueError(f"kind: expected OptimizationJob, got {job.kind}")
        if errors := validate(job):
            raise ValueError("invalid optimization job:\n" + "\n".join(map(str, errors)))
        return self._start(job, None)

    def _start(self, job: ApiOptimizationJob, template: types.TrainJobTemplate | None) -> str:
        name = str(job.metadata.name)
        if self._path(name).exists():
            raise ValueError(f"metadata.name: {constants.OPTIMIZATION_JOB_KIND} {name} exists")
        state = {
            "name": name,
            "creationTimestamp": datetime.now(timezone.utc).isoformat(),
            "status": constants.OPTIMIZATION_JOB_CREATED,
            "message": "",
            "manifest": job.to_dict(),
            "trials": [],
        }
        write_json(self._path(name), state)
        driver = _Driver(self, state, job, template)
        self._drivers[name] = driver
        driver.start()
        return name

    def list_jobs(self) -> list[OptimizationJob]:
        names = (
            sorted(p.stem for p in self.directory.glob("*.json")) if self.directory.is_dir() else []
        )
        jobs = [self.get_job(name) for name in names]
        return sorted(jobs, key=lambda job: job.creation_timestamp)

    def get_job(self, name: str) -> OptimizationJob:
        state = self._read(name)
        job = parse(state["manifest"])
        assert isinstance(job, ApiOptimizationJob)
        definition = definition_of(job)
        metrics = [objective.metric for objective in definition.objectives]
        trials = []
        for record in state["trials"]:
            try:
                trainjob = self.trainer.get_job(record["name"])
            except JobNotFoundError:
                continue  # deleted by hand: no longer part of the job
            observation = Observation(
                {k: {int(s): v for s, v in steps.items()} for k, steps in record["metrics"].items()}
            )
            trials.append(
                Trial(
                    name=record["name"],
                    parameters=assignment_strings(record["parameters"]),
                    trainjob=trainjob,
                    metrics=observation.summary(metrics),
                    objective=record["objective"],
                    pruned_at_step=record["prunedAtStep"],
                )
            )
        return OptimizationJob(
            name=name,
            search_space=definition.search_space,
            objectives=definition.objectives,
            algorithm=definition.algorithm,
            trial_config=definition.trial_config,
            trials=trials,
            creation_timestamp=datetime.fromisoformat(state["creationTimestamp"]),
            status=state["status"],
        )

    def get_job_logs(self, name: str, trial_name: str | None, follow: bool) -> Iterator[str]:
        return self.trainer.get_job_logs(self._best_or_first_trial(name, trial_name), follow=follow)

    def get_job_events(self, name: str) -> list[types.Event]:
        events = [
            event
            for record in self._read(name)["trials"]
            for event in self._trial_events(record["name"])
        ]
        return sorted(events, key=lambda event: event.event_time)

    def _trial_events(self, trial: str) -> list[types.Event]:
        try:
            return self.trainer.get_job_events(trial)
        except JobNotFoundError:
            return []

    def trial_histories(self, name: str) -> dict[str, dict[int, float]]:
        state = self._read(name)
        job = parse(state["manifest"])
        assert isinstance(job, ApiOptimizationJob)
        metric = job.spec.objectives[0].metric
        return {
            record["name"]: {int(s): v for s, v in record["metrics"].get(metric, {}).items()}
            for record in state["trials"]
        }

    def stop_trial(self, name: str) -> None:
        """End a trial's processes and keep its TrainJob (Failed), logs and metrics."""
        backend = self.trainer.backend
        assert isinstance(backend, LocalBackend)
        backend.stop_job(name)

    def delete_job(self, name: str) -> None:
        state = self._read(name)
        driver = self._drivers.pop(name, None)
        self._path(name).unlink()  # a driver in another process sees this and stops
        if driver is not None:
            driver.halt()
        for record in state["trials"]:
            with contextlib.suppress(JobNotFoundError):
                self.trainer.delete_job(record["name"])


class _Driver(threading.Thread):
    """Runs one optimization job to its end (not a daemon: the process waits for it)."""

    def __init__(
        self,
        backend: LocalOptimizerBackend,
        state: dict[str, Any],
        job: ApiOptimizationJob,
        template: types.TrainJobTemplate | None,
    ) -> None:
        super().__init__(name=f"optimize-{state['name']}")
        self.backend = backend
        self.state = state
        self.template = template
        self.study: Study = study_from_job(job)
        self.definition = definition_of(job)
        self.metrics = [objective.metric for objective in self.definition.objectives]
        config = self.definition.trial_config
        self.slots = max(1, min(config.parallel_trials, os.cpu_count() or 1))
        self.job_name = str(state["name"])
        self._halted = threading.Event()
        self._stoppers: list[threading.Thread] = []

    def halt(self) -> None:
        """Stop driving (the trials are the caller's to end) and wait for the thread."""
        self._halted.set()
        if threading.current_thread() is not self:
            self.join(timeout=30)

    def run(self) -> None:
        try:
            while not self._halted.is_set():
                self._tick()
                if self._halted.is_set() or not self.backend._path(self.job_name).exists():
                    return
                if self._finished():
                    break  # written below, once every pruned trial has stopped
                write_json(self.backend._path(self.job_name), self.state)
                self._halted.wait(POLL_SECONDS)
        except Exception as error:  # the job records why it failed; nothing is swallowed
            _logger.exception("optimization job %s failed", self.job_name)
            self._end(constants.OPTIMIZATION_JOB_FAILED, f"the local driver failed: {error!r}")
        for stopper in self._stoppers:
            stopper.join()
        if self.backend._path(self.job_name).exists():
            write_json(self.backend._path(self.job_name), self.state)

    def _finished(self) -> bool:
        return self.state["status"] in (
            constants.OPTIMIZATION_JOB_COMPLETE,
            constants.OPTIMIZATION_JOB_FAILED,
        )

    def _records(self) -> list[TrialRecord]:
        metric = self.metrics[0]
        return [
            TrialRecord(
                number=t["number"],
                parameters=t["parameters"],
                state=t["state"],
                objective=t["objective"],
                steps={int(s): v for s, v in t["metrics"].get(metric, {}).items()},
                checked_step=t["checkedStep"],
                engine_state=t["engineState"],
            )
            for t in self.state["trials"]
        ]

    def _tick(self) -> None:
        for trial in self.state["trials"]:
            if trial["state"] == "running":
                self._observe(trial)
        config = self.definition.trial_config
        failed = sum(t["state"] == "failed" for t in self.state["trials"])
        if config.max_failed_trials is not None and failed > config.max_failed_trials:
            self._stop_running()
            self._end(
                constants.OPTIMIZATION_JOB_FAILED,
                f"{failed} trials failed (max_failed_trials={config.max_failed_trials})",
            )
            return
        running = sum(t["state"] == "running" for t in self.state["trials"])
        left = config.num_trials - len(self.state["trials"])
        suggestions = (
            suggest(self.study, self._records(), min(self.slots - running, left))
            if left > 0
            else []
        )
        for suggestion in suggestions:
            self._start(suggestion.parameters, suggestion.engine_state)
        if self.state["trials"]:
            self.state["status"] = constants.OPTIMIZATION_JOB_RUNNING
        if not any(t["state"] == "running" for t in self.state["trials"]) and not suggestions:
            complete = sum(t["state"] == "complete" for t in self.state["trials"])
            if complete:
                self._end(constants.OPTIMIZATION_JOB_COMPLETE, f"{complete} trials completed")
            else:
                self._end(constants.OPTIMIZATION_JOB_FAILED, "no trial reported its objective")

    def _start(self, parameters: dict[str, Any], engine_state: dict[str, Any]) -> None:
        number = len(self.state["trials"])
        trial_name = f"{self.job_name}-{number}"
        if self.template is None:
            self._submit_trial(number, parameters, engine_state)
        else:
            self._train_trial(self.template, trial_name, parameters)
        self.state["trials"].append(
            {
                "number": number,
                "name": trial_name,
                "parameters": parameters,
                "state": "running",
                "objective": None,
                "metrics": {},
                "checkedStep": None,
                "engineState": engine_state,
                "prunedAtStep": None,
            }
        )

    def _train_trial(
        self, template: types.TrainJobTemplate, trial_name: str, parameters: dict[str, Any]
    ) -> None:
        """A trial of a Python function: its parameters are keyword arguments and env."""
        strings = assignment_strings(parameters)
        trainer = template.trainer
        assert isinstance(trainer, types.CustomTrainer)
        trial_trainer = dataclasses.replace(
            trainer,
            func_args={**(trainer.func_args or {}), **parameters},
            env={**(trainer.env or {}), **{parameter_env_name(k): v for k, v in strings.items()}},
        )
        self.backend.trainer.train(
            runtime=template.runtime,
            initializer=template.initializer,
            trainer=trial_trainer,
            options=[
                Name(trial_name),
                Labels({OPTIMIZATION_JOB_LABEL: self.job_name}),
                Annotations({PARAMETERS_ANNOTATION: json.dumps(strings, sort_keys=True)}),
            ],
        )

    def _submit_trial(
        self, number: int, parameters: dict[str, Any], engine_state: dict[str, Any]
    ) -> None:
        """A trial of a manifest's template: the TrainJob the controller would create."""
        manifest = {**self.state["manifest"]}
        manifest["metadata"] = {**manifest["metadata"], "uid": self.job_name}
        trainjob = trial_trainjob(manifest, number, parameters, engine_state)
        # No owner here: deleting the optimization job deletes its trials itself.
        trainjob["metadata"] = {
            key: value
            for key, value in trainjob["metadata"].items()
            if key not in ("ownerReferences", "namespace")
        }
        self.backend.trainer.submit(trainjob)

    def _observe(self, trial: dict[str, Any]) -> None:
        client = self.backend.trainer
        job = client.get_job(trial["name"])
        status = job.trainer_status.metrics if job.trainer_status else {}
        observation = observe(
            client.get_job_metrics(trial["name"]),
            client.get_job_logs(trial["name"]),
            status,
            self.metrics,
        )
        trial["metrics"] = {
            name: {str(s): v for s, v in steps.items()} for name, steps in observation.steps.items()
        }
        objective = observation.latest(self.metrics[0])
        if job.status == trainer_constants.TRAINJOB_COMPLETE:
            trial["objective"] = objective
            trial["state"] = "complete" if objective is not None else "failed"
            if objective is None:
                _logger.warning(
                    "trial %s completed without reporting %s: counted as failed",
                    trial["name"],
                    self.metrics[0],
                )
        elif job.status in (trainer_constants.TRAINJOB_FAILED, trainer_constants.TRAINJOB_STOPPED):
            trial["state"] = "failed"
        elif self.study.early_stopping is not None:
            records = self._records()
            decision = check_pruning(self.study, records, trial["number"])
            trial["checkedStep"] = decision.checked_step
            trial["engineState"] = decision.engine_state
            if decision.prune:
                # Stopping waits for the processes to end; the next trial need not.
                stopper = threading.Thread(
                    target=self.backend.stop_trial, args=(trial["name"],), name="stop-trial"
                )
                stopper.start()
                self._stoppers.append(stopper)
                trial["state"] = "pruned"
                trial["prunedAtStep"] = decision.at_step
                trial["objective"] = objective

    def _stop_running(self) -> None:
        for trial in self.state["trials"]:
            if trial["state"] == "running":
                self.backend.stop_trial(trial["name"])
                trial["state"] = "failed"

    def _end(self, status: str, message: str) -> None:
        self.state["status"] = status
        self.state["message"] = message
