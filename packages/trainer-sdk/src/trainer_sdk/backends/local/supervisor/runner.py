"""Runs a job's local plan as processes and reports what a JobSet controller would.

The plan (``plan.LocalPlan``, compiled at submit) says everything but the values that exist only
now: the runner is given the run's (its ports, the data cache's endpoint), adds the attempt
number and the job's ``PATH``, and ``plan.bind`` puts them in each pod's slots as it starts.
One attempt starts replicated jobs as their ``dependsOn`` allows, each pod a process group of its
own. A failed pod fails the attempt, and so does a pod that cannot start (a missing command, an
environment or argument the kernel refuses): every pod is ended, and the JobSet restarts while
``failurePolicy.maxRestarts`` allows. ``successPolicy`` decides when the JobSet has completed
(remaining pods are then ended). ``activeDeadlineSeconds`` ends the run as failed.

Ending an attempt ends every process it started: the pods, their descendants, and whatever
carries the attempt's token (``processes``), SIGTERM first and SIGKILL after the grace period.
"""

from __future__ import annotations

import contextlib
import errno
import os
import queue
import secrets
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from trainer_sdk.backends.local import suspension, volumes
from trainer_sdk.backends.local.jobdir import JobDir, make_private_dir, open_private, write_text
from trainer_sdk.backends.local.plan import LateValue, LocalPlan, LocalPod, ReplicatedJob, bind
from trainer_sdk.backends.local.submit.pods import TERMINATION_LOG
from trainer_sdk.backends.local.supervisor import isolation, mpi, processes

__all__ = ["START_FAILED_EXIT_CODE", "JobSetRunner", "PodState"]

START_FAILED_EXIT_CODE = 128
"""The exit code recorded for a pod whose process could not be started (as a container runtime's
'cannot run')."""


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


@dataclass
class PodState:
    """What the local 'kubelet' knows about one pod."""

    name: str
    step: str
    replicated_job: str
    job_index: int
    device: str = "Unknown"
    device_count: str = "Unknown"
    phase: str = "Pending"
    pid: int | None = None
    exit_code: int | None = None
    started_at: str | None = None
    finished_at: str | None = None


@dataclass
class _Attempt:
    identities: dict[str, processes.ProcessIdentity] = field(default_factory=dict)
    start_errors: dict[str, str] = field(default_factory=dict)
    states: dict[str, PodState] = field(default_factory=dict)
    started_jobs: set[str] = field(default_factory=set)


class JobSetRunner:
    """Executes a job's ``plan`` in ``job_dir``; ``report(status, pods)`` gets each change.

    ``values`` are the run's late values (``plan.LateValue``: the rendezvous port, and the SSH
    port and cache endpoint when the plan has MPI workers or a cache); the runner adds the
    attempt number and ``base_env``'s ``PATH``."""

    def __init__(
        self,
        plan: LocalPlan,
        job_dir: JobDir,
        base_env: Mapping[str, str],
        values: Mapping[LateValue, str],
        report: Callable[[dict[str, Any], list[PodState]], None],
        adopted: Callable[[], list[processes.ProcessIdentity]] = list,
    ) -> None:
        self.plan = plan
        self.adopted = adopted  # processes of the job that left every pod's tree (a subreaper's)
        self.job_dir = job_dir
        self.base_env = dict(base_env)
        # What every pod (and all it starts) carries: how the attempt's processes are found.
        self.token = self.base_env.setdefault(processes.JOB_TOKEN_ENV, secrets.token_hex(16))
        self.values = {**values, LateValue.JOB_PATH: self.base_env.get("PATH", "")}
        self.report = report
        if plan.mpi is not None:
            mpi.write_volume_files(plan.mpi.files)
            python = shutil.which("python", path=self.base_env.get("PATH")) or sys.executable
            mpi.write_rank_shims(Path(plan.mpi.rank_bin), python)
        self.hosts = self._write_hosts() if plan.isolated else None
        self.deadline = (
            time.monotonic() + plan.active_deadline_seconds
            if plan.active_deadline_seconds
            else None
        )
        self.restarts = 0
        self.first_attempt = 0  # suspension hook: a resumed job's attempts go on counting
        self._exits: queue.Queue[tuple[int, str, int]] = queue.Queue()
        self._attempt = _Attempt()
        self._attempt_number = 0
        self._stopping = threading.Event()

    # -- status, as the JobSet controller writes it -------------------------------------------
    def _job_states(self) -> dict[str, str]:
        """Per replicated job: Complete, Failed, Ready (all pods running) or Pending."""
        result = {}
        for job in self.plan.jobs:
            phases = [
                self._attempt.states[pod.name].phase
                for pod in job.pods
                if pod.name in self._attempt.states
            ]
            if len(phases) < len(job.pods) or not phases:
                result[job.name] = "Pending"
            elif all(phase == "Succeeded" for phase in phases):
                result[job.name] = "Complete"
            elif any(phase == "Failed" for phase in phases):
                result[job.name] = "Failed"
            elif all(phase in ("Running", "Succeeded") for phase in phases):
                result[job.name] = "Ready"
            else:
                result[job.name] = "Pending"
        return result

    def _replicated_jobs_status(self) -> list[dict[str, Any]]:
        statuses = []
        for job in self.plan.jobs:
            by_index: dict[int, list[str]] = {}
            for pod in job.pods:
                state = self._attempt.states.get(pod.name)
                by_index.setdefault(pod.job_index, []).append(state.phase if state else "Pending")
            counts = {"ready": 0, "succeeded": 0, "failed": 0, "active": 0, "suspended": 0}
            for phases in by_index.values():
                if all(phase == "Succeeded" for phase in phases):
                    counts["succeeded"] += 1
                elif any(phase == "Failed" for phase in phases):
                    counts["failed"] += 1
                elif any(phase == "Running" for phase in phases):
                    counts["active"] += 1
                    if all(phase in ("Running", "Succeeded") for phase in phases):
                        counts["ready"] += 1
            statuses.append({"name": job.name, **counts})
        return statuses

    def _status(self, condition: tuple[str, str, str] | None = None) -> dict[str, Any]:
        status: dict[str, Any] = {
            "restarts": self.restarts,
            "replicatedJobsStatus": self._replicated_jobs_status(),
        }
        if condition:
            kind, reason, message = condition
            status["conditions"] = [
                {
                    "type": kind,
                    "status": "True",
                    "reason": reason,
                    "message": message,
                    "lastTransitionTime": _now(),
                }
            ]
            status["terminalState"] = kind if kind in ("Completed", "Failed") else None
        return status

    def publish(self, condition: tuple[str, str, str] | None = None) -> dict[str, Any]:
        """Report the current status (with a terminal or suspended condition) and return it."""
        status = self._status(condition)
        self.report(status, list(self._attempt.states.values()))
        return status

    # -- processes ------------------------------------------------------------------------------
    def _termination_log(self, name: str) -> Path:
        return self.job_dir.pod_dir(name) / TERMINATION_LOG

    def _failure_message(self, name: str, step: str, code: int) -> str:
        """Why pod ``name`` failed: its exit code, and its termination log when it wrote one."""
        if name in self._attempt.start_errors:
            return f"pod {name} (step {step}) could not start: {self._attempt.start_errors[name]}"
        message = f"pod {name} (step {step}) exited with code {code}"
        try:
            reason = self._termination_log(name).read_text(errors="replace").strip()
        except FileNotFoundError:
            return message
        return f"{message}: {reason}" if reason else message

    def _start_pod(self, pod: LocalPod) -> bool:
        """Start ``pod``'s process; False (the pod Failed, its exit queued) when it cannot start."""
        state = self._attempt.states[pod.name]
        try:
            process = self._spawn(pod)
        except (OSError, ValueError, subprocess.SubprocessError) as error:
            reason = _start_error(error)
            self._attempt.start_errors[pod.name] = reason
            with contextlib.suppress(OSError), open_private(self.job_dir.log(pod.step)) as log:
                log.write(f"[trainer-sdk] pod {pod.name} could not start: {reason}\n".encode())
            state.started_at = _now()
            self._exits.put((self._attempt_number, pod.name, START_FAILED_EXIT_CODE))
            return False
        identity = processes.ProcessIdentity.of(process.pid)  # not reaped yet: still this child
        if identity is not None:
            self._attempt.identities[pod.name] = identity
        state.pid, state.phase, state.started_at = process.pid, "Running", _now()
        attempt = self._attempt_number
        threading.Thread(target=self._watch, args=(attempt, pod.name, process), daemon=True).start()
        return True

    def _write_hosts(self) -> Path:
        """The job's ``/etc/hosts``: every pod's name at its address (an MPI job's workers each
        at their own)."""
        path = self.job_dir.path / "hosts"
        addresses = {pod.name: pod.address for pod in self.plan.pods()}
        write_text(path, isolation.hosts_file(addresses, self.plan.subdomain, self.plan.namespace))
        return path

    def _command(
        self, pod: LocalPod, work_dir: Path, env: Mapping[str, str]
    ) -> tuple[list[str], Path]:
        """The pod's command line and the directory it starts in (inside its namespaces when
        ``isolated``: there its ``workingDir`` is looked up after the mounts, and a program
        named without a path is looked up first, so that a missing one fails to start as
        without namespaces)."""
        if not self.plan.isolated:
            has_dir = pod.working_dir is not None and Path(pod.working_dir).is_dir()
            return list(pod.command), Path(pod.working_dir or work_dir) if has_dir else work_dir
        program = pod.command[0]
        if "/" not in program and shutil.which(program, path=env.get("PATH")) is None:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)
        scratch = self.job_dir.path / "sandbox" / pod.name
        make_private_dir(scratch.parent)  # each level: mkdir -p leaves parents world-readable
        make_private_dir(scratch)
        sandbox = isolation.PodSandbox(
            mounts=pod.mounts,
            scratch=scratch,
            cwd=work_dir,
            hostname=pod.name,
            hosts=self.hosts,
            working_dir=pod.working_dir,
        )
        return isolation.wrap(pod.command, sandbox), work_dir

    def _spawn(self, pod: LocalPod) -> subprocess.Popen[bytes]:
        work_dir = self.job_dir.pod_dir(pod.name)
        for directory in (work_dir, *map(Path, pod.directories)):
            directory.mkdir(parents=True, exist_ok=True)
        volumes.make_sub_paths(pod.mounts)
        self._termination_log(pod.name).unlink(missing_ok=True)  # from an earlier attempt
        attempt = str(self.first_attempt + self.restarts)
        pod = bind(pod, {**self.values, LateValue.RESTART_ATTEMPT: attempt})
        env = {**self.base_env, **pod.env, processes.JOB_TOKEN_ENV: self.token}
        command, cwd = self._command(pod, work_dir, env)
        with open_private(self.job_dir.log(pod.step)) as log:
            if self.restarts:
                log.write(f"--- restart {self.restarts} ---\n".encode())
            if pod.image:
                log.write(
                    f"[trainer-sdk] image {pod.image} recorded; the local backend runs this Python "
                    "environment instead\n".encode()
                )
            log.flush()
            return subprocess.Popen(
                command,
                cwd=cwd,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )

    def _watch(self, attempt: int, name: str, process: subprocess.Popen[bytes]) -> None:
        self._exits.put((attempt, name, process.wait()))

    def attempt_processes(self) -> list[processes.ProcessIdentity]:
        """The live processes of the current attempt: its pods, their descendants, and every
        process that carries the attempt's token (also those that left the tree), and those
        ``adopted`` names."""
        found = processes.find(self._attempt.identities.values(), self.token, scoped=True)
        return sorted({*found, *self.adopted()}, key=lambda process: process.pid)

    def end_all(self) -> None:
        """End every process of the current attempt (SIGTERM, SIGKILL after the grace period)."""
        processes.terminate(self.attempt_processes, self.plan.grace_seconds)

    def stop(self) -> None:
        """Ask a running ``run()`` to end its pods and return as failed (from another thread)."""
        self._stopping.set()
        self._exits.put((-1, "", 0))

    # -- the control loop ----------------------------------------------------------------------
    def _start_ready_jobs(self) -> None:
        states = self._job_states()
        for job in self.plan.jobs:
            if job.name in self._attempt.started_jobs or not _dependencies_met(job, states):
                continue
            self._attempt.started_jobs.add(job.name)
            for pod in job.pods:
                if not self._start_pod(pod):
                    return
            states = self._job_states()

    def _succeeded(self) -> bool:
        states = self._job_states()
        targets = self.plan.success_targets or [job.name for job in self.plan.jobs]
        done = [states.get(name) == "Complete" for name in targets]
        return any(done) if self.plan.success_operator == "Any" else all(done)

    def _complete_remaining(self) -> None:
        """Pods the success policy ended (an MPI job's sshd workers once the launcher is done)
        read Succeeded: the JobSet they belong to completed."""
        for state in self._attempt.states.values():
            if state.phase == "Running":
                state.phase, state.finished_at = "Succeeded", _now()

    def _run_attempt(self) -> tuple[str, str, str]:
        self._attempt_number += 1
        self._attempt = _Attempt(
            states={
                pod.name: PodState(
                    pod.name,
                    pod.step,
                    pod.replicated_job,
                    pod.job_index,
                    pod.device,
                    pod.device_count,
                )
                for pod in self.plan.pods()
            }
        )
        self._start_ready_jobs()
        self.publish()
        while True:
            timeout = None if self.deadline is None else max(0.0, self.deadline - time.monotonic())
            try:
                attempt, name, code = self._exits.get(timeout=timeout)
            except queue.Empty:
                self.end_all()
                return "Failed", "DeadlineExceeded", "the JobSet ran past its active deadline"
            if self._stopping.is_set():
                self.end_all()
                return "Failed", "Stopped", "the JobSet was stopped"
            if attempt != self._attempt_number:
                continue
            state = self._attempt.states[name]
            state.exit_code, state.finished_at = code, _now()
            state.phase = "Succeeded" if code == 0 else "Failed"
            if code != 0:
                self.publish()
                self.end_all()
                reason = suspension.pod_failure_reason(code)  # Preempted for SIGTERM
                return "Failed", reason, self._failure_message(name, state.step, code)
            if self._succeeded():
                self.end_all()
                self._complete_remaining()
                return "Completed", "AllJobsCompleted", "the JobSet completed"
            self._start_ready_jobs()
            self.publish()

    def run(self, suspended: bool = False) -> dict[str, Any]:
        """Run until Completed or Failed (nothing when ``suspended``: the JobSet's
        ``spec.suspend``); returns the final JobSet status."""
        if suspended:
            return self.publish(("Suspended", "SuspendedJobs", "the JobSet is suspended"))
        budget = self.plan.max_restarts
        while True:
            kind, reason, message = self._run_attempt()
            restartable = kind == "Failed" and reason in suspension.RESTARTING_REASONS
            if restartable and self.restarts < budget:
                self.restarts += 1
                continue
            if restartable and budget:
                message = f"{message}; reached maxRestarts {budget}"
            return self.publish(suspension.final_condition(kind, reason, message))


def _dependencies_met(job: ReplicatedJob, states: Mapping[str, str]) -> bool:
    """Whether every ``dependsOn`` entry of ``job`` has reached its status."""
    for dependency in job.depends_on:
        state = states.get(dependency.name)
        if dependency.status == "Complete" and state != "Complete":
            return False
        if dependency.status == "Ready" and state not in ("Ready", "Complete"):
            return False
    return True


def _start_error(error: BaseException) -> str:
    """Why a process could not start, with what to do where the kernel's words are terse."""
    if isinstance(error, OSError) and error.errno == errno.E2BIG:
        return (
            f"{error} (the command line or environment is too large for the kernel: one argument "
            "or variable may hold at most 128 KiB; pass large values through a file)"
        )
    return f"{type(error).__name__}: {error}"
