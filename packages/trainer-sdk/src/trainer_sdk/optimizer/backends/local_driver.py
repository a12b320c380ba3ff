"""The local driver of the one search lifecycle: a thread that applies ``trainer_search.decide``
to one optimization job whose trials are local TrainJobs.

Each pass reads every trial (its TrainJob's state and the objective it reported, by
``log_metrics``, ``name=value`` lines or its status metrics), asks ``decide`` what to do, and
applies it: creates trials as the TrainJobs a cluster would get (same annotations, label and
env), records what each trial carries, stops pruned trials, writes the job's status. The state
file is written before each trial is submitted, and trial names are ``<job>-<number>``, so a
driver killed at any point and resumed neither loses nor repeats a trial. The driver holds the
job's lock (``flock``) while it runs; a dead driver's lock is free, which is how a resume knows.
"""

from __future__ import annotations

import copy
import fcntl
import json
import logging
import os
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Final

from trainer_api import PARAMETERS_ANNOTATION
from trainer_search import (
    ENGINE_STATE_ANNOTATION,
    TRIAL_ANNOTATION,
    Decision,
    ObservedTrial,
    TrialChange,
    TrialPhase,
    decide,
    trial_trainjob,
)

from trainer_sdk import constants as trainer_constants
from trainer_sdk.backends.local.jobdir import write_text
from trainer_sdk.client import TrainerClient
from trainer_sdk.errors import JobNotFoundError
from trainer_sdk.optimizer.objective import observe

__all__ = ["POLL_SECONDS", "LocalDriver", "held_lock", "objective_metric"]

_logger = logging.getLogger(__name__)

POLL_SECONDS: Final = 0.2
"""How often the driver looks at its trials."""
_PHASES: Final[dict[str, TrialPhase]] = {
    trainer_constants.TRAINJOB_COMPLETE: "complete",
    trainer_constants.TRAINJOB_FAILED: "failed",
    trainer_constants.TRAINJOB_STOPPED: "failed",
}


def objective_metric(manifest: dict[str, Any]) -> str:
    """The metric an OptimizationJob manifest optimizes."""
    return str(manifest["spec"]["objectives"][0]["metric"])


def held_lock(path: Path) -> int | None:
    """An open descriptor holding ``path``'s exclusive lock, or None when a driver holds it."""
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(descriptor)
        return None
    return descriptor


class LocalDriver(threading.Thread):
    """Drives one optimization job to its end (not a daemon: the process waits for it).

    ``lock``: the descriptor holding the job's lock, closed when the driver ends."""

    def __init__(self, trainer: TrainerClient, path: Path, lock: int) -> None:
        self.path = path
        super().__init__(name=f"optimize-{path.stem}")
        self.trainer = trainer
        self.lock = lock
        self._written = path.read_text()
        self.state: dict[str, Any] = json.loads(self._written)
        self.metric = objective_metric(self.state["manifest"])
        self.prior = self.state["prior"]
        self._last: tuple[tuple[list[ObservedTrial], dict[str, Any]], Decision] | None = None
        self._halted = threading.Event()
        self._stoppers: list[threading.Thread] = []

    def halt(self) -> None:
        """Stop driving (the trials are the caller's to end) and wait for the thread."""
        self._halted.set()
        if threading.current_thread() is not self:
            self.join(timeout=30)

    def run(self) -> None:
        try:
            while not self._halted.is_set() and self.path.exists():
                if self.step().phase in ("Complete", "Failed"):
                    break
                self._halted.wait(POLL_SECONDS)
        except Exception as error:  # the job records why it failed; nothing is swallowed
            _logger.exception("optimization job %s: the local driver failed", self.path.stem)
            self._fail(f"the local driver failed: {error!r}")
        finally:
            for stopper in self._stoppers:
                stopper.join()
            os.close(self.lock)

    def step(self) -> Decision:
        """One pass: observe the trials, decide, apply."""
        for entry in self.state["trials"]:
            if not entry["submitted"]:  # written, then the driver stopped around its submit
                self._submit(entry, adopt=True)
        manifest = {**self.state["manifest"], "status": self.state["status"]}
        observed = [self._observe(entry) for entry in self.state["trials"]]
        if self._last is not None and self._last[0] == (observed, self.state["status"]):
            return self._last[1]  # the same inputs: ``decide`` would say the same again
        inputs = (observed, copy.deepcopy(self.state["status"]))
        decision = decide(
            manifest,
            observed,
            datetime.now(timezone.utc),
            capacity=os.cpu_count() or 1,
            prior=[ObservedTrial(t["name"], t["annotations"], t["phase"]) for t in self.prior],
        )
        entries = {entry["name"]: entry for entry in self.state["trials"]}
        for change in decision.changes:
            self._apply(entries[change.name], change)
        for new in decision.create:
            entry = {"name": new.name, "annotations": dict(new.annotations), "submitted": False}
            self.state["trials"].append(entry)
            self._write()  # before the TrainJob exists: a resumed driver submits it
            self._submit(entry)
        if decision.phase in ("Complete", "Failed"):
            for stopper in self._stoppers:  # the job ends once its stopped trials have
                stopper.join()
        self.state["status"] = decision.status
        self._write()
        self._last = (inputs, decision)
        return decision

    def _observe(self, entry: dict[str, Any]) -> ObservedTrial:
        """The trial as the lifecycle reads it; a finished trial is read once more, then its
        recorded steps stand."""
        if entry.get("settled"):
            return ObservedTrial(entry["name"], entry["annotations"], entry["settled"])
        name = entry["name"]
        try:
            job = self.trainer.get_job(name)
        except JobNotFoundError:  # deleted by hand: it cannot report any more
            entry["settled"] = "failed"
            return ObservedTrial(name, entry["annotations"], "failed")
        phase = _PHASES.get(job.status, "running")
        reported = job.trainer_status.metrics if job.trainer_status else {}
        observation = observe(
            self.trainer.get_job_metrics(name),
            self.trainer.get_job_logs(name),
            reported,
            [self.metric],
        )
        if phase != "running":
            entry["settled"] = phase
        return ObservedTrial(
            name, entry["annotations"], phase, observation.steps.get(self.metric, {})
        )

    def _apply(self, entry: dict[str, Any], change: TrialChange) -> None:
        entry["annotations"].update(change.annotations)
        if change.stop:
            # Stopping waits for the processes to end; the next trial need not.
            stopper = threading.Thread(
                target=self.trainer.stop_job, args=(entry["name"],), name="stop-trial"
            )
            stopper.start()
            self._stoppers.append(stopper)
        elif change.suspend is not None:
            (self.trainer.suspend_job if change.suspend else self.trainer.resume_job)(entry["name"])

    def _submit(self, entry: dict[str, Any], adopt: bool = False) -> None:
        """Create the trial's TrainJob: the one the controller would (no owner here: deleting
        the optimization job deletes its trials itself). ``adopt``: a TrainJob of that name
        already there is the trial, submitted before the last driver stopped."""
        if adopt and self._exists(entry["name"]):
            entry["submitted"] = True
            return
        manifest = self.state["manifest"]
        owner = {**manifest, "metadata": {**manifest["metadata"], "uid": self.path.stem}}
        annotations = entry["annotations"]
        trainjob = trial_trainjob(
            owner,
            int(annotations[TRIAL_ANNOTATION]),
            json.loads(annotations[PARAMETERS_ANNOTATION]),
            json.loads(annotations[ENGINE_STATE_ANNOTATION]),
        )
        metadata = trainjob["metadata"]
        metadata.pop("ownerReferences")
        metadata.pop("namespace")
        metadata["annotations"] = {**metadata["annotations"], **entry["annotations"]}
        self.trainer.submit(trainjob)
        entry["submitted"] = True
        self._write()

    def _exists(self, name: str) -> bool:
        try:
            self.trainer.get_job(name)
        except JobNotFoundError:
            return False
        return True

    def _fail(self, message: str) -> None:
        """Record that driving failed (a fact the lifecycle cannot observe) as the job's end."""
        now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        conditions = [
            c for c in self.state["status"].get("conditions", []) if c["type"] != "Failed"
        ]
        conditions.append(
            {
                "type": "Failed",
                "status": "True",
                "reason": "DriverFailed",
                "message": message,
                "lastTransitionTime": now,
            }
        )
        self.state["status"] = {**self.state["status"], "conditions": conditions}
        if self.path.exists():
            self._write()

    def _write(self) -> None:
        """Write the state when it changed (most passes change nothing)."""
        text = json.dumps(self.state, indent=1)
        if text != self._written and self.path.exists():  # deleted: the job is gone
            write_text(self.path, text)
            self._written = text
