"""The local backend: TrainJobs built by the runtime framework, JobSets run as processes.

Creating a job needs the API models and the runtime framework, which take a third of a second
to import: they are imported where a job is created, so that reading, listing and waiting
(``trainer list``, the UI) never load them.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import logging
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
import weakref
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainer_sdk import constants, types
from trainer_sdk.backends.base import AnyTrainer, PackageSet, ResourceUsage, RuntimeBackend, Volume
from trainer_sdk.backends.local import facts, plan, suspension, usage, volumes
from trainer_sdk.backends.local.jobdir import JobDir, hold_lock, lock_held
from trainer_sdk.backends.local.packages import cache_entries, plan_packages, prune_cache
from trainer_sdk.backends.local.runtime_store import RuntimeStore
from trainer_sdk.backends.local.submit import compiler, devices
from trainer_sdk.backends.local.submit.needs import check_commands, check_engine
from trainer_sdk.backends.local.submit.pods import TERMINATION_GRACE_SECONDS
from trainer_sdk.backends.local.supervisor import cgroups, isolation, job_env, processes
from trainer_sdk.checkpoint.status import checkpoint_events, checkpoint_status
from trainer_sdk.configs import LocalBackendConfig
from trainer_sdk.errors import (
    InvalidTrainJobError,
    JobNotFoundError,
    RuntimeNotFoundError,
    TrainerError,
)
from trainer_sdk.private_files import (
    make_private_dir,
    open_private,
    read_json,
    write_json,
    write_text,
)
from trainer_sdk.status.jobs import PodView, derive_status, to_train_job
from trainer_sdk.status.outputs import is_builtin, output_in
from trainer_sdk.status.runtimes import runtime_from_manifest
from trainer_sdk.training.metrics import MetricPoint, latest_values, read_history

if TYPE_CHECKING:
    from trainer_api import TrainJob

    from trainer_sdk.backends.local.submit import planning
    from trainer_sdk.options import Option

__all__ = ["LocalBackend"]

_logger = logging.getLogger(__name__)
FOLLOW_INTERVAL_SECONDS = 0.05
_FOLLOW_READ_CHARS = 1 << 18  # what one read of a followed log holds at most (its lines, a
# copy, the text read: about 1 MiB in all while a UI streams it)
# How often waiting checks whether the job's state changed: a stat, cheap enough to be prompt.
STATE_CHECK_SECONDS = 0.01
STOP_TIMEOUT_SECONDS = 15.0
RACY_SECONDS = 2.0
# Statuses a job never leaves.
_UNCHANGING = (constants.TRAINJOB_COMPLETE, constants.TRAINJOB_FAILED, constants.TRAINJOB_STOPPED)
RESUME_WAIT_SECONDS = 30.0  # for a suspended job's supervisor to finish exiting
LOCK_CHECK_SECONDS = 0.05
# The distributions a runtime's framework (its trainer.kubeflow.org/framework label) runs on.
FRAMEWORK_PACKAGES: dict[str, tuple[str, ...]] = {
    "torch": ("torch",),
    "torchtune": ("torchtune", "torch"),
    "deepspeed": ("deepspeed", "torch"),
    "jax": ("jax",),
    "mlx": ("mlx",),
    "xgboost": ("xgboost",),
}


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _output(job_dir: JobDir, runtime: dict[str, Any]) -> str | None:
    """Where a BuiltinTrainer job's model is on this machine: the local directory of the volume
    its trainer pods mount at ``OUTPUT_PATH`` (from the compiled plan)."""
    if not is_builtin(runtime) or not job_dir.plan.is_file():
        return None
    trainers = [pod for pod in plan.from_document(read_json(job_dir.plan)).pods()]
    trainers = [pod for pod in trainers if pod.container == constants.NODE]
    found = (
        output_in((mount.path, mount.local) for mount in trainers[0].mounts) if trainers else None
    )
    return str(Path(found[0], found[1])) if found else None


class LocalBackend(RuntimeBackend):
    """Jobs run on this machine and live on disk under ``config.root`` (``jobdir``)."""

    kind = "local"
    keeps_metric_history = True
    samples_resources = True
    can_stop = True

    def __init__(self, cfg: LocalBackendConfig | None = None) -> None:
        self.config = cfg or LocalBackendConfig()
        self.root = Path(self.config.root)
        make_private_dir(self.root)
        self._supervisors: dict[str, subprocess.Popen[bytes]] = {}
        self._listing: tuple[int, list[str]] | None = None  # the folder's mtime, its jobs
        self._ended: dict[str, tuple[tuple[int, int], types.TrainJob]] = {}  # by trainjob.json
        self.runtime_store = RuntimeStore(self.root)
        atexit.register(_release, weakref.ref(self))

    # -- runtimes -------------------------------------------------------------------------------
    def runtime_manifests(self) -> dict[str, dict[str, Any]]:
        """Built-in and applied runtimes by name (a TrainingRuntime shadows a cluster one)."""
        return self.runtime_store.by_name()

    def _runtime_manifest(self, kind: str, name: str, namespace: str) -> dict[str, Any]:
        """The runtime a ``runtimeRef`` of ``kind`` and ``name`` names, as a cluster finds it."""
        store = (
            self.runtime_store
            if namespace == self.runtime_store.namespace
            else RuntimeStore(self.root, namespace)
        )
        index = store.index()
        if (kind, name) not in index:
            raise RuntimeNotFoundError(
                _runtime_label(kind, name), [_runtime_label(*key) for key in index]
            )
        return index[(kind, name)]

    def apply_runtime(self, manifest: dict[str, Any]) -> bool:
        return self.runtime_store.apply(manifest)

    def delete_runtime(self, name: str, kind: str | None = None) -> str:
        return self.runtime_store.delete(name, kind)

    def get_runtime_packages(self, runtime: types.Runtime) -> list[str]:
        """The packages the runtime's framework needs, as upstream's local backend returns them
        (``["torch"]`` for torch-distributed); local jobs run in this Python environment."""
        self.get_runtime(runtime.name)
        return list(FRAMEWORK_PACKAGES.get(runtime.trainer.framework, ()))

    # -- creating -------------------------------------------------------------------------------
    def train(
        self,
        runtime: str | types.Runtime | None = None,
        initializer: types.Initializer | None = None,
        trainer: AnyTrainer | None = None,
        options: Sequence[Option] | None = None,
    ) -> str:
        from trainer_sdk.manifests.trainjobs import build_trainjob, generate_name

        runtime = self.resolve_runtime(runtime)
        runtime_manifest = self._runtime_manifest(runtime.kind.value, runtime.name, "default")
        job = build_trainjob(generate_name(), runtime, trainer, initializer, options or (), self)
        packages: list[str] = []
        index_urls: list[str] = []
        if isinstance(trainer, types.CustomTrainer) and trainer.packages_to_install:
            packages, index_urls = list(trainer.packages_to_install), list(trainer.pip_index_urls)
        return self._create(job, runtime_manifest, packages, index_urls)

    def submit(
        self,
        manifest: dict[str, Any],
        runtime: dict[str, Any] | None = None,
        packages: Sequence[str] = (),
        pip_index_urls: Sequence[str] = (),
    ) -> str:
        """Run a TrainJob manifest (what ``trainer run -f`` does); returns its name. The manifest
        is parsed here, once; ``runtime``: the runtime it references, when not installed."""
        from trainer_sdk.manifests import admission

        job = admission.parse_trainjob(manifest)
        if runtime is None:
            reference = job.spec.runtime_ref
            runtime = self._runtime_manifest(
                reference.kind or constants.CLUSTER_TRAINING_RUNTIME_KIND,
                reference.name,
                job.metadata.namespace or "default",
            )
        return self._create(job, runtime, packages, pip_index_urls)

    def _create(
        self,
        job: TrainJob,
        runtime_manifest: dict[str, Any],
        packages: Sequence[str],
        pip_index_urls: Sequence[str],
    ) -> str:
        """Admit and build ``job``, compile its plan, store it, start its supervisor."""
        from trainer_api import FieldError

        from trainer_sdk.backends.local.submit import planning
        from trainer_sdk.manifests import admission
        from trainer_sdk.manifests.trainjobs import generate_name

        job.metadata.name = name = job.metadata.name or generate_name()
        job_dir = JobDir(self.root, name)
        if job_dir.path.exists():
            raise InvalidTrainJobError(
                [FieldError("metadata.name", f"TrainJob {name!r} already exists in {self.root}")]
            )
        job.metadata.namespace = job.metadata.namespace or "default"
        job.metadata.creation_timestamp = _now()
        planned = planning.plan_trainjob(job, admission.parse_runtime(runtime_manifest), _now())
        local_plan = compiler.compile_plan(
            planned.jobset,
            planned.others,
            job_dir,
            isolated=isolation.available(),
            gpus=devices.nvidia_gpus(),
            job_env=job_env.job_env_names(os.environ, bool(packages)),
            active_deadline_seconds=job.spec.active_deadline_seconds,
        )
        self._check_accelerators(local_plan.accelerator_shortfall)
        python = self.config.python or sys.executable
        check_commands((pod.command for pod in local_plan.pods()), python, packages)
        check_engine(runtime_manifest, python)
        local_plan = dataclasses.replace(
            local_plan,
            packages=plan_packages(packages, python, self.config.isolated_packages),
            pip_index_urls=tuple(pip_index_urls),
        )
        if (paths := volumes.mount_paths(planned.jobset)) and not local_plan.isolated:
            _logger.warning(
                "TrainJob %s: pods cannot run in private mount namespaces here, so they see their "
                "volumes in local directories, not at %s (the checkpoint directory the runtime "
                "framework sets is the local one; a path in func_args, built in code or read "
                "from a file names this machine's path)",
                name,
                ", ".join(paths),
            )
        make_private_dir(self.root)
        job_dir.path.mkdir(mode=0o700)
        try:
            self._store(job_dir, planned, local_plan)
        except OSError as error:  # a full disk, say: nothing half-written stays behind
            started = self._supervisors.pop(name, None)
            if started is not None:  # its pid could not be recorded: it must not run on
                started.kill()
                started.wait()
            shutil.rmtree(job_dir.path, ignore_errors=True)
            raise TrainerError(
                f"TrainJob {name!r} could not be stored in {self.root}: {error.strerror or error}"
                + ("; free space and submit it again" if facts.disk_full(error) else "")
            ) from error
        return name

    def _store(
        self, job_dir: JobDir, planned: planning.Planned, local_plan: plan.LocalPlan
    ) -> None:
        """Write the job's files and start its supervisor."""
        # Held from here on, by this client and then by the supervisor: a job whose lock is free
        # and that has not finished has died (see load_state).
        lock = hold_lock(job_dir.supervisor_lock)
        try:
            facts.reserve_note(job_dir.end_note)
            write_json(job_dir.runtime, planned.runtime)
            write_json(job_dir.jobset, planned.jobset)
            write_json(job_dir.plan, plan.to_document(local_plan))
            write_json(
                job_dir.state,
                {
                    "token": secrets.token_hex(16),
                    "objects": planned.others,
                    "pods": [
                        {
                            "name": pod.name,
                            "step": pod.step,
                            "phase": constants.POD_PENDING,
                            "device": pod.device,
                            "device_count": pod.device_count,
                        }
                        for pod in local_plan.pods()
                    ],
                    "events": [],
                    "finished": False,
                },
            )
            # The job as admitted (defaulted), as a cluster stores it; last: the job exists
            # once it is complete on disk.
            write_json(job_dir.trainjob, planned.trainjob)
            self._start_supervisor(job_dir, lock)
        finally:
            os.close(lock)

    def _check_accelerators(self, shortfall: Sequence[str]) -> None:
        """Pods that request accelerators this machine lacks (``shortfall``: why) run on CPU,
        warned once, with ``accelerators_on_cpu``; without it, InvalidTrainJobError says so up
        front."""
        if shortfall and not self.config.accelerators_on_cpu:
            from trainer_api import FieldError

            raise InvalidTrainJobError(
                [
                    FieldError(
                        "spec.trainer.resourcesPerNode",
                        f"{why}; run it in a cluster, or pass LocalBackendConfig("
                        "accelerators_on_cpu=True) to run it here on CPU with the cluster's "
                        "process count",
                    )
                    for why in shortfall
                ]
            )
        for why in shortfall:
            _logger.warning("%s: running on CPU with the cluster's process count", why)

    def _start_supervisor(self, job_dir: JobDir, lock: int) -> None:
        command = [sys.executable, "-m", "trainer_sdk.backends.local.supervisor", str(job_dir.path)]
        command += ["--lock-fd", str(lock)]
        if self.config.python:
            command += ["--python", self.config.python]
        stop_on_exit = self.config.stop_on_exit
        if not stop_on_exit:
            command.append("--detach")
        # Its own session, no terminal, no pipe to us: the job outlives this process unless
        # stop_on_exit (then the supervisor ends the job when our end of its stdin closes).
        # SIGTERM starts blocked, unblocked once the supervisor handles it: a stop, suspend or
        # delete that comes while its interpreter starts is handled, not its default death.
        unblocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
        try:
            with open_private(job_dir.supervisor_log) as log:
                process = subprocess.Popen(
                    command,
                    stdin=subprocess.PIPE if stop_on_exit else subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    pass_fds=(lock,),
                )
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, unblocked)
        identity = processes.ProcessIdentity.of(process.pid)  # our unreaped child: still it
        write_text(job_dir.supervisor_pid, str(identity) if identity else "")
        self._supervisors[job_dir.name] = process

    # -- reading --------------------------------------------------------------------------------
    def _job_dir(self, name: str, partial: bool = False) -> JobDir:
        """The job's directory; with ``partial`` also one a killed submission left incomplete."""
        try:
            job_dir = JobDir(self.root, name)
        except ValueError:
            raise JobNotFoundError(name, str(self.root)) from None
        if not (job_dir.path.is_dir() if partial else job_dir.exists()):
            raise JobNotFoundError(name, str(self.root))
        return job_dir

    def _read(self, job_dir: JobDir) -> types.TrainJob:
        manifest = read_json(job_dir.trainjob)
        state = load_state(job_dir, manifest)
        manifest["status"] = state.get("trainjob") or {}
        pods = [
            PodView(
                pod["name"],
                pod["step"],
                pod["phase"],
                pod.get("device", constants.UNKNOWN),
                pod.get("device_count", constants.UNKNOWN),
            )
            for pod in state.get("pods", [])
        ]
        progress = read_json(job_dir.progress) if job_dir.progress.is_file() else None
        restarts = int((state.get("jobset") or {}).get("restarts") or 0)
        runtime = read_json(job_dir.runtime)
        job = to_train_job(
            manifest,
            runtime_from_manifest(runtime),
            pods,
            progress,
            restarts,
            _output(job_dir, runtime),
        )
        if job.checkpoint is None:  # locally the checkpoint metrics are in the history
            job.checkpoint = checkpoint_status(latest_values(read_history(job_dir.metrics)))
        return job

    def get_job(self, name: str) -> types.TrainJob:
        return self._read(self._job_dir(name))

    def list_jobs(self, runtime: types.Runtime | None = None) -> list[types.TrainJob]:
        """Every job, oldest first. A job that has ended never changes again: once read, it is
        kept until its directory is another one (deleted, or made again under its name). The
        folder is listed again only when it changed; while it has not, no directory was made or
        removed in it, so only the jobs that can still change are read again."""
        listing = self._listing
        names = self._job_names()
        unchanged = self._listing is listing
        if not unchanged:  # forget the jobs gone; those kept are checked by their identity below
            present = set(names)
            self._ended = {name: kept for name, kept in self._ended.items() if name in present}
        jobs = []
        for name in names:
            kept = self._ended.get(name) if unchanged else None
            try:
                job = kept[1] if kept is not None else self._listed(JobDir(self.root, name))
            except (OSError, ValueError) as error:  # one damaged directory hides only itself
                _logger.warning("skipping %s: %s", self.root / name, error)
                continue
            if job is not None and (runtime is None or job.runtime.name == runtime.name):
                jobs.append(job)
        return sorted(jobs, key=lambda job: job.creation_timestamp)

    def _job_names(self) -> list[str]:
        """The job directories' names; listed again when the folder's modification time moved
        (or moved less than ``RACY_SECONDS`` ago: a coarse file clock can hide a second change
        within one tick); the same list while it did not."""
        stamp = os.stat(self.root).st_mtime_ns
        settled = time.time_ns() - stamp > RACY_SECONDS * 1e9
        if self._listing is None or self._listing[0] != stamp or not settled:
            names = sorted(
                entry.name
                for entry in os.scandir(self.root)
                if not entry.name.startswith(".") and entry.is_dir()
            )
            self._listing = (stamp, names)
        return self._listing[1]

    def _listed(self, job_dir: JobDir) -> types.TrainJob | None:
        """The job (None for a directory a killed submission left without its TrainJob), read
        again unless it had ended and its directory is the same; kept once it has ended (what
        was kept under its name goes, whatever the read finds)."""
        identity = _file_identity(job_dir.trainjob)
        kept = self._ended.pop(job_dir.name, None)
        if identity is None:
            return None
        if kept is None or kept[0] != identity:
            job = self._read(job_dir)
            if job.status not in _UNCHANGING:
                return job
            kept = (identity, job)
        self._ended[job_dir.name] = kept
        return kept[1]

    def get_job_logs(
        self, name: str, step: str = constants.NODE + "-0", follow: bool = False
    ) -> Iterator[str]:
        job_dir = self._job_dir(name)
        steps = [pod["step"] for pod in _read_state(job_dir).get("pods", [])]
        if step not in steps:
            raise ValueError(
                f"step: TrainJob {name!r} has no step {step!r}; its steps are {', '.join(steps)}"
            )
        return _follow(job_dir, step) if follow else _read_lines(job_dir.log(step))

    def get_job_events(self, name: str) -> list[types.Event]:
        job_dir = self._job_dir(name)
        state = _read_state(job_dir)
        events = [
            types.Event(
                involved_object_kind=event["kind"],
                involved_object_name=event["object"],
                message=event["message"],
                reason=event["reason"],
                event_time=datetime.fromisoformat(event["time"]),
            )
            for event in state.get("events", [])
        ]
        # The checkpoint hook: saves and resumes, from the job's metric history.
        events += checkpoint_events(name, read_history(job_dir.metrics))
        return sorted(events, key=lambda event: event.event_time)

    def _pause(self, name: str, seconds: float) -> None:
        """Return as soon as the supervisor rewrites the job's state (a new file each time),
        whatever ``polling_interval`` the caller chose; a stat per check, no parsing."""
        state = self._job_dir(name).state
        before = _file_identity(state)
        deadline = time.monotonic() + seconds
        while _file_identity(state) == before and time.monotonic() < deadline:
            time.sleep(STATE_CHECK_SECONDS)

    def get_job_metrics(self, name: str) -> list[MetricPoint]:
        """Every point ``log_metrics`` (and ``update_trainjob_status``) recorded, by step."""
        return read_history(self._job_dir(name).metrics)

    def get_job_manifest(self, name: str) -> dict[str, Any]:
        """The TrainJob as its submit stored it, with the status its supervisor wrote."""
        job_dir = self._job_dir(name)
        manifest: dict[str, Any] = read_json(job_dir.trainjob)
        manifest["status"] = load_state(job_dir, manifest).get("trainjob") or {}
        return manifest

    def get_jobset_manifest(self, name: str) -> dict[str, Any] | None:
        """The JobSet the job runs, with the status its supervisor reported."""
        job_dir = self._job_dir(name)
        if not job_dir.jobset.is_file():
            return None
        manifest: dict[str, Any] = read_json(job_dir.jobset)
        manifest["status"] = _read_state(job_dir).get("jobset") or {}
        return manifest

    def log_length(self, name: str, step: str) -> int | None:
        """How many lines the step's log file holds now (0 before it has any)."""
        path = self._job_dir(name).log(step)
        if not path.is_file():
            return 0
        count, last = 0, b"\n"
        with open(path, "rb") as stream:
            while chunk := stream.read(_FOLLOW_READ_CHARS):  # bounded: a log may be huge
                count, last = count + chunk.count(b"\n"), chunk[-1:]
        return count + (last != b"\n")  # a last line without its newline counts

    def sample_resources(self, names: Sequence[str]) -> dict[str, Mapping[str, ResourceUsage]]:
        """Each running pod's process tree, from one pass over ``/proc``, and the job's cgroup."""
        table = usage.ProcessTable()
        sampled: dict[str, Mapping[str, ResourceUsage]] = {}
        for name in names:
            try:
                state = _read_state(self._job_dir(name))
            except (JobNotFoundError, OSError, ValueError):
                continue  # deleted meanwhile
            pods: dict[str, ResourceUsage] = {
                str(pod["name"]): table.tree(int(pod["pid"]))
                for pod in state.get("pods") or []
                if pod.get("phase") == constants.POD_RUNNING and pod.get("pid")
            }
            cgroup = Path(state["cgroup"]) if state.get("cgroup") else None
            if cgroup is not None and (total := usage.cgroup_usage(cgroup)) is not None:
                pods["job (cgroup)"] = total
            sampled[name] = pods
        return sampled

    # -- what is kept beside the jobs -----------------------------------------------------------
    def list_volumes(self) -> list[Volume]:
        """The claims under the root, with their size and the jobs mounting them."""
        return list(volumes.list_claims(self.root))

    def delete_volume(self, namespace: str, claim: str) -> Path:
        return volumes.delete_claim(namespace, claim, self.root)

    def list_package_sets(self) -> list[PackageSet]:
        return list(cache_entries(self.root))

    def prune_package_sets(self, older_than_seconds: float) -> list[PackageSet]:
        return list(prune_cache(self.root, older_than_seconds))

    # -- suspending -----------------------------------------------------------------------------
    def suspend_job(self, name: str, suspend: bool) -> None:
        """``spec.suspend``: True ends the job's pods with SIGTERM (checkpointing ranks save),
        False starts the suspended job again: a new attempt (``TRAINER_RESTART_ATTEMPT`` goes on
        counting), which resumes from the latest checkpoint. Either is a no-op when the job is
        that way already, also when another client suspended or resumed it meanwhile."""
        job_dir = self._job_dir(name)
        job = self._read(job_dir)
        if job.status in (constants.TRAINJOB_COMPLETE, constants.TRAINJOB_FAILED):
            action = "suspended" if suspend else "resumed"
            raise TrainerError(f"TrainJob {name!r} has ended ({job.status}): it cannot be {action}")
        if suspend:
            if job.status != constants.TRAINJOB_SUSPENDED:
                _write_suspend(job_dir, True)
                self._stop(job_dir)
        elif job.status == constants.TRAINJOB_SUSPENDED:
            self._resume(job_dir)

    def _resume(self, job_dir: JobDir) -> None:
        """A new supervisor for the suspended job: the next attempt number, pods Pending again.
        It runs the plan the job's submit compiled (``plan.json``)."""
        if not job_dir.plan.is_file():
            raise TrainerError(
                f"TrainJob {job_dir.name!r} was submitted by an earlier trainer-sdk and has no "
                f"{job_dir.plan.name} to run; submit it again (its checkpoints are kept)"
            )
        # Its supervisor may still be exiting (never signalled: it would record the job Failed).
        previous = self._supervisors.pop(job_dir.name, None)
        if previous is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):  # then the lock says so below
                previous.wait(timeout=RESUME_WAIT_SECONDS)
        lock = _lock_suspended(job_dir)
        if lock is None:
            return  # another client resumed it meanwhile
        try:
            state = _read_state(job_dir)
            offset = suspension.attempt_offset(state) + int(
                (state.get("jobset") or {}).get("restarts") or 0
            )
            state[suspension.ATTEMPT_OFFSET_KEY] = offset + 1
            for pod in state.get("pods", []):
                pod.update(phase=constants.POD_PENDING, pid=None, exit_code=None)
            state.pop("facts", None)  # what ended the last run
            state["jobset"] = {}  # the new run's JobSet reports its own status
            message = f"spec.suspend is false: attempt {offset + 1} starts"
            state.setdefault("events", []).append(
                {
                    "kind": "TrainJob",
                    "object": job_dir.name,
                    "reason": "Resumed",
                    "time": _now().isoformat(),
                    "message": message,
                    "attempt": offset + 1,
                }
            )
            state["finished"] = False
            _write_suspend(job_dir, False)
            write_json(job_dir.state, state)
            self._start_supervisor(job_dir, lock)
        finally:
            os.close(lock)

    # -- ending ---------------------------------------------------------------------------------
    def stop_job(self, name: str) -> None:
        """End the job's processes and keep it (Stopped, with its logs and metrics); a job that
        has already ended keeps its outcome."""
        job_dir = self._job_dir(name)
        if self._read(job_dir).status not in _UNCHANGING:
            write_text(job_dir.stop_requested, "")  # so the supervisor records Stopped
            self._stop(job_dir)

    def delete_job(self, name: str) -> None:
        job_dir = self._job_dir(name, partial=True)
        self._stop(job_dir)
        shutil.rmtree(job_dir.path)

    def _stop(self, job_dir: JobDir) -> None:
        """End the supervisor (which ends the job's processes) and whatever carries the job's
        token; wait until they are gone. Only processes proven to be the job's are signalled."""
        supervisor = self._supervisors.pop(job_dir.name, None)
        if supervisor is not None:  # our unreaped child: its PID is still its own
            if supervisor.poll() is None:
                supervisor.terminate()
            try:
                supervisor.wait(timeout=_stop_timeout(job_dir))
            except subprocess.TimeoutExpired:
                supervisor.kill()
                supervisor.wait()
        else:
            _end_recorded_supervisor(job_dir)
        _wait_for_lock(job_dir, STOP_TIMEOUT_SECONDS)  # its guardian, if it had to clean up
        state = _read_state(job_dir)
        cgroup = Path(state["cgroup"]) if state.get("cgroup") else None
        if cgroup is not None and not cgroups.is_job_cgroup(cgroup, job_dir.name):
            cgroup = None
        if state.get("token") or cgroup is not None:
            processes.terminate(
                lambda: processes.find(token=state.get("token"), cgroup=cgroup),
                TERMINATION_GRACE_SECONDS,
            )
        if cgroup is not None:
            cgroups.remove(cgroup)

    def close(self) -> None:
        """With ``stop_on_exit``: end the jobs this client started and wait for their supervisors.
        Otherwise nothing: the jobs run on."""
        supervisors, self._supervisors = self._supervisors, {}
        stopping = [process for process in supervisors.values() if process.stdin]
        for process in stopping:
            if process.stdin:
                process.stdin.close()
        for process in stopping:
            try:
                process.wait(timeout=STOP_TIMEOUT_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _runtime_label(kind: str, name: str) -> str:
    """A runtime as errors name it: its name, with its kind when namespaced."""
    return name if kind == constants.CLUSTER_TRAINING_RUNTIME_KIND else f"{name} ({kind})"


def _read_state(job_dir: JobDir) -> dict[str, Any]:
    """``state.json``, empty when a killed submission never wrote it."""
    try:
        state: dict[str, Any] = read_json(job_dir.state)
    except FileNotFoundError:
        return {}
    return state


def load_state(job_dir: JobDir, trainjob: dict[str, Any]) -> dict[str, Any]:
    """``state.json`` as readers must see it. A job that has not finished and whose lock nobody
    holds any more (its supervisor, guardian and submitting client are gone) was lost: its
    status is what ``build`` derives with the fact ``SupervisorLost`` (``facts``), as its
    supervisor would have written it; nothing is written here."""
    state = _read_state(job_dir)
    if state.get("finished") or lock_held(job_dir.supervisor_lock):
        return state
    state = _read_state(job_dir)  # what it wrote last before letting go
    if state.get("finished"):
        return state
    note = facts.read_note(job_dir.end_note)  # what a supervisor that could not write left
    if note is not None:
        facts.record(state, facts.FAILED, *note)
    elif facts.FAILED not in (state.get("facts") or {}):
        message = (
            f"the job's supervisor ended before the job did; see {job_dir.supervisor_log}"
            if state
            else "the job was never started: its submission was interrupted"
        )
        facts.record(state, facts.FAILED, facts.SUPERVISOR_LOST, message)
    admission = facts.admit_stored(trainjob, read_json(job_dir.runtime), state.get("trainjob"))
    jobset = read_json(job_dir.jobset) if job_dir.jobset.is_file() else {}  # none: interrupted
    derived = facts.derive_status(admission, jobset, state, _now())
    if derived is not None:
        state["trainjob"] = derived.to_dict()
    return state


def _lock_suspended(job_dir: JobDir) -> int | None:
    """The job's lock, once its last supervisor has let go, while the job is still suspended;
    None when another client resumed it meanwhile (the lock then held by the new run, or the
    job no longer suspended)."""
    deadline = time.monotonic() + RESUME_WAIT_SECONDS
    while True:
        if not _read_state(job_dir).get("finished"):
            return None  # a new run was started
        try:
            lock = hold_lock(job_dir.supervisor_lock)
            break
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise TrainerError(
                    f"TrainJob {job_dir.name!r}: its supervisor has not ended in "
                    f"{RESUME_WAIT_SECONDS} s"
                ) from None
            time.sleep(LOCK_CHECK_SECONDS)
    state = _read_state(job_dir)  # under the lock: no other client writes it now
    status = derive_status(state.get("trainjob") or {}, ())
    if state.get("finished") and status == constants.TRAINJOB_SUSPENDED:
        return lock
    os.close(lock)
    return None


def _write_suspend(job_dir: JobDir, suspend: bool) -> None:
    """``spec.suspend`` of the stored TrainJob and JobSet."""
    for path in (job_dir.trainjob, job_dir.jobset):
        document = read_json(path)
        spec = document.setdefault("spec", {})
        if suspend:
            spec["suspend"] = True
        else:
            spec.pop("suspend", None)
        write_json(path, document)


def _stop_timeout(job_dir: JobDir) -> float:
    """How long a stopping supervisor may take: ``STOP_TIMEOUT_SECONDS`` plus whatever grace the
    job's pods are given beyond the default (``terminationGracePeriodSeconds``)."""
    try:
        grace = plan.from_document(read_json(job_dir.plan)).grace_seconds
    except (FileNotFoundError, ValueError, KeyError):  # a killed submission wrote none
        return STOP_TIMEOUT_SECONDS
    return STOP_TIMEOUT_SECONDS + max(0.0, grace - TERMINATION_GRACE_SECONDS)


def _end_recorded_supervisor(job_dir: JobDir) -> None:
    """SIGTERM the supervisor recorded in ``supervisor.pid`` if it is provably still that process;
    SIGKILL it if it is still there after the stop timeout."""
    try:
        identity = processes.ProcessIdentity.parse(job_dir.supervisor_pid.read_text())
    except FileNotFoundError:
        return
    if identity is None or not identity.send(signal.SIGTERM):
        return
    deadline = time.monotonic() + _stop_timeout(job_dir)
    while identity.alive() and time.monotonic() < deadline:
        time.sleep(FOLLOW_INTERVAL_SECONDS)
    identity.send(signal.SIGKILL)


def _wait_for_lock(job_dir: JobDir, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while lock_held(job_dir.supervisor_lock) and time.monotonic() < deadline:
        time.sleep(FOLLOW_INTERVAL_SECONDS)


def _ended(job_dir: JobDir) -> bool:
    """Whether nothing of the job runs any more: it finished, or nobody holds its lock."""
    return bool(_read_state(job_dir).get("finished")) or not lock_held(job_dir.supervisor_lock)


def _file_identity(path: Path) -> tuple[int, int] | None:
    """What changes when ``write_json`` replaces ``path``: its inode and modification time."""
    try:
        status = path.stat()
    except FileNotFoundError:
        return None
    return status.st_ino, status.st_mtime_ns


def _read_lines(path: Path) -> Iterator[str]:
    if not path.is_file():
        return
    with open(path, errors="replace") as stream:
        for line in stream:
            yield line.rstrip("\n")


def _follow(job_dir: JobDir, step: str) -> Iterator[str]:
    """Lines as they are written; stops when the job has finished and the log is read to its end."""
    path = job_dir.log(step)
    pending = ""
    position = 0
    while True:
        finished = _ended(job_dir)
        if path.is_file():
            with open(path, errors="replace") as stream:
                stream.seek(position)
                while chunk := stream.read(_FOLLOW_READ_CHARS):  # bounded: a log may be huge
                    *lines, pending = (pending + chunk).split("\n")
                    yield from lines
                position = stream.tell()
        if finished:
            if pending:
                yield pending
            return
        time.sleep(FOLLOW_INTERVAL_SECONDS)


def _release(reference: weakref.ref[LocalBackend]) -> None:
    backend = reference()
    if backend is not None:
        backend.close()
