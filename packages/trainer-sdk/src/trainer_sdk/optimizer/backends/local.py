"""The local optimizer: trials are local TrainJobs, driven by a thread of the calling process.

The job's state is ``<root>/.optimizations/<name>.json``: the OptimizationJob (its status
included) and each trial's name and annotations, written by its driver (``local_driver``) after
every change, so other processes (``trainer get optimizationjob``, the UI) see it. The driver
lives in the process that started (or resumed) the job: ``wait_for_job_status`` or ``trainer
optimize`` keeps it alive; when that process ends, running trials go on, and ``resume_job``
(``trainer optimizationjob resume``) drives the job on from where it stopped.
"""

from __future__ import annotations

import contextlib
import copy
import os
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Final

from trainer_api import WARM_START_ANNOTATION, apply_defaults, parse, validate
from trainer_api import OptimizationJob as ApiOptimizationJob
from trainer_search import (
    ObservedTrial,
    assignment_strings,
    job_message,
    job_phase,
    trial_record,
    trial_steps,
)

from trainer_sdk import types
from trainer_sdk.backends.local.jobdir import read_json, write_json
from trainer_sdk.client import TrainerClient
from trainer_sdk.configs import LocalBackendConfig
from trainer_sdk.errors import JobNotFoundError
from trainer_sdk.optimizer.backends.base import OptimizerBackend
from trainer_sdk.optimizer.backends.local_driver import LocalDriver, held_lock, objective_metric
from trainer_sdk.optimizer.constants import constants
from trainer_sdk.optimizer.objective import Observation
from trainer_sdk.optimizer.spec import Definition, definition_of, new_name, requested_job
from trainer_sdk.optimizer.types.optimization_types import OptimizationJob, Trial

__all__ = ["LocalOptimizerBackend"]

STATE_DIR: Final = ".optimizations"


class LocalOptimizerBackend(OptimizerBackend):
    """Optimization jobs whose trials run on this machine."""

    def __init__(self, config: LocalBackendConfig) -> None:
        self.trainer = TrainerClient(config)
        self.directory = config.root / STATE_DIR
        self._drivers: dict[str, LocalDriver] = {}

    def _path(self, name: str) -> Path:
        return self.directory / f"{name}.json"

    def _read(self, name: str) -> dict[str, Any]:
        try:
            document: dict[str, Any] = read_json(self._path(name))
        except FileNotFoundError:
            raise RuntimeError(f"{constants.OPTIMIZATION_JOB_KIND} {name} not found") from None
        return document

    def optimize(self, trial_template: types.TrainJobTemplate, definition: Definition) -> str:
        name = new_name()
        return self._start(requested_job(self.trainer.backend, name, trial_template, definition))

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
        return self._start(job)

    def _start(self, job: ApiOptimizationJob) -> str:
        name = str(job.metadata.name)
        if self._path(name).exists():
            raise ValueError(f"metadata.name: {constants.OPTIMIZATION_JOB_KIND} {name} exists")
        earlier = (job.metadata.annotations or {}).get(WARM_START_ANNOTATION)
        state = {
            "name": name,
            "creationTimestamp": datetime.now(timezone.utc).isoformat(),
            "manifest": job.to_dict(),
            "status": {},
            "trials": [],
            "prior": self._finished_trials(earlier) if earlier else [],
        }
        write_json(self._path(name), state)
        self.resume_job(name)
        return name

    def _finished_trials(self, name: str) -> list[dict[str, Any]]:
        """The finished trials of job ``name`` (a warm start's history), as the lifecycle reads
        them; ValueError when there is no such job."""
        try:
            state = self._read(name)
        except RuntimeError as error:
            raise ValueError(f"metadata.annotations[{WARM_START_ANNOTATION}]: {error}") from None
        return [
            {"name": entry["name"], "annotations": entry["annotations"], "phase": entry["settled"]}
            for entry in state["trials"]
            if entry.get("settled")
        ]

    def resume_job(self, name: str) -> None:
        """Drive job ``name`` on in this process: its trials that ran are kept, those written but
        never submitted are submitted, and no trial is created twice. ValueError while another
        driver holds it; nothing to do once it has ended."""
        state = self._read(name)
        if job_phase(state["status"]) in ("Complete", "Failed"):
            return
        lock = held_lock(self.directory / f"{name}.lock")
        if lock is None:
            raise ValueError(f"{constants.OPTIMIZATION_JOB_KIND} {name} is being driven already")
        driver = LocalDriver(self.trainer, self._path(name), lock)
        self._drivers[name] = driver
        driver.start()

    def is_driven(self, name: str) -> bool:
        """Whether a driver (in any process) holds job ``name``."""
        lock = held_lock(self.directory / f"{name}.lock")
        if lock is not None:
            os.close(lock)
        return lock is None

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
        metric = objective_metric(state["manifest"])
        trials = []
        for entry in state["trials"]:
            try:
                trainjob = self.trainer.get_job(entry["name"])
            except JobNotFoundError:
                continue  # deleted by hand (or not yet submitted): no longer part of the job
            record, _ = trial_record(
                ObservedTrial(entry["name"], entry["annotations"], entry.get("settled", "running"))
            )
            trials.append(
                Trial(
                    name=entry["name"],
                    parameters=assignment_strings(record.parameters),
                    trainjob=trainjob,
                    metrics=Observation({metric: dict(record.steps)}).summary([metric]),
                    objective=record.objective,
                    pruned_at_step=record.pruned_at_step,
                )
            )
        status = state["status"]
        result = status.get("result") or {}
        return OptimizationJob(
            name=name,
            search_space=definition.search_space,
            objectives=definition.objectives,
            algorithm=definition.algorithm,
            trial_config=definition.trial_config,
            trials=trials,
            creation_timestamp=datetime.fromisoformat(state["creationTimestamp"]),
            status=job_phase(status),
            best_trial_name=result.get("trainJobName"),
            message=job_message(status),
        )

    def get_job_logs(self, name: str, trial_name: str | None, follow: bool) -> Iterator[str]:
        return self.trainer.get_job_logs(self._best_or_first_trial(name, trial_name), follow=follow)

    def get_job_events(self, name: str) -> list[types.Event]:
        events = [
            event
            for entry in self._read(name)["trials"]
            for event in self._trial_events(entry["name"])
        ]
        return sorted(events, key=lambda event: event.event_time)

    def _trial_events(self, trial: str) -> list[types.Event]:
        try:
            return self.trainer.get_job_events(trial)
        except JobNotFoundError:
            return []

    def trial_histories(self, name: str) -> dict[str, dict[int, float]]:
        return {
            entry["name"]: dict(trial_steps(entry["annotations"]))
            for entry in self._read(name)["trials"]
        }

    def delete_job(self, name: str) -> None:
        state = self._read(name)
        driver = self._drivers.pop(name, None)
        if driver is not None:
            driver.halt()
        self._path(name).unlink()  # a driver in another process sees this and stops
        for entry in state["trials"]:
            with contextlib.suppress(JobNotFoundError):
                self.trainer.delete_job(entry["name"])

    def _pause(self, name: str, seconds: float) -> None:
        """Wait, unless nobody drives the job any more: then it would never change."""
        if not self.is_driven(name) and job_phase(self._read(name)["status"]) not in (
            "Complete",
            "Failed",
        ):
            raise RuntimeError(
                f"{constants.OPTIMIZATION_JOB_KIND} {name} is not being driven (the process "
                f"that drove it ended): OptimizerClient.resume_job({name!r}) or `trainer "
                f"optimizationjob resume {name}` goes on with it"
            )
        super()._pause(name, seconds)
