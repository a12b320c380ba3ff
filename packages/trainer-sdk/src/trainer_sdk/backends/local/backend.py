"""The local backend: TrainJobs built by the runtime framework, JobSets run as processes.

Creating a job needs the API models and the runtime framework, which take a third of a second
to import: they are imported where a job is created, so that reading, listing and waiting
(``trainer list``, the UI) never load them.
"""

from __future__ import annotations

import atexit
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
from collections.abc import Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainer_sdk import constants, types
from trainer_sdk.backends.base import AnyTrainer, RuntimeBackend
from trainer_sdk.backends.local import plan, suspension, volumes
from trainer_sdk.backends.local.jobdir import (
    JobDir,
    hold_lock,
    lock_held,
    make_private_dir,
    open_private,
    read_json,
    write_json,
    write_text,
)
from trainer_sdk.backends.local.packages import plan_packages
from trainer_sdk.backends.local.runtime_store import RuntimeStore
from trainer_sdk.backends.local.submit import compiler, devices
from trainer_sdk.backends.local.submit.needs import check_commands, check_engine
from trainer_sdk.backends.local.submit.pods import TERMINATION_GRACE_SECONDS
from trainer_sdk.backends.local.supervisor import cgroups, isolation, job_env, processes
from trainer_sdk.backends.local.supervisor.guardian import SUPERVISOR_LOST, record_failure
from trainer_sdk.checkpoint.status import checkpoint_events, checkpoint_status
from trainer_sdk.configs import LocalBackendConfig
from trainer_sdk.errors import InvalidTrainJobError, JobNotFoundError, RuntimeNotFoundError
from trainer_sdk.status.jobs import PodView, to_train_job
from trainer_sdk.status.outputs import is_builtin, output_in
from trainer_sdk.status.runtimes import runtime_from_manifest
from trainer_sdk.training.metrics import MetricPoint, latest_values, read_history

if TYPE_CHECKING:
    from trainer_sdk.options import Option

__all__ = ["LocalBackend"]

_logger = logging.getLogger(__name__)
FOLLOW_INTERVAL_SECONDS = 0.05
_FOLLOW_READ_CHARS = 1 << 20  # what one read of a followed log holds at most
# How often waiting checks whether the job's state changed: a stat, cheap enough to be prompt.
STATE_CHECK_SECONDS = 0.01
STOP_TIMEOUT_SECONDS = 15.0
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
    """Jobs run on this machine and live on disk under ``config.root``."""

    def __init__(self, cfg: LocalBackendConfig | None = None) -> None:
        self.config = cfg or LocalBackendConfig()
        self.root = Path(self.config.root)
        make_private_dir(self.root)
        self._supervisors: dict[str, subprocess.Popen[bytes]] = {}
        self.runtime_store = RuntimeStore(self.root)
        atexit.register(_release, weakref.ref(self))

    # -- runtimes -------------------------------------------------------------------------------
    def _runtime_manifests(self) -> dict[str, dict[str, Any]]:
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
        from trainer_sdk.manifests.trainjobs import build_trainjob_manifest, generate_name

        runtime = self.resolve_runtime(runtime)
        runtime_manifest = self._runtime_manifest(runtime.kind.value, runtime.name, "default")
        manifest = build_trainjob_manifest(
            generate_name(), runtime, trainer, initializer, options or (), self
        )
        packages: list[str] = []
        index_urls: list[str] = []
        if isinstance(trainer, types.CustomTrainer) and trainer.packages_to_install:
            packages, index_urls = list(trainer.packages_to_install), list(trainer.pip_index_urls)
        return self.submit(manifest, runtime_manifest, packages=packages, pip_index_urls=index_urls)

    def submit(
        self,
        manifest: dict[str, Any],
        runtime: dict[str, Any] | None = None,
        packages: Sequence[str] = (),
        pip_index_urls: Sequence[str] = (),
    ) -> str:
        """Run a TrainJob manifest (what ``trainer run -f`` does); returns its name."""
        from trainer_api import FieldError

        from trainer_sdk.backends.local.submit import planning
        from trainer_sdk.manifests.trainjobs import generate_name

        runtime_manifest = runtime

        metadata = manifest.setdefault("metadata", {})
        name = str(metadata.setdefault("name", generate_name()))
        job_dir = JobDir(self.root, name)
        if job_dir.path.exists():
            raise InvalidTrainJobError(
                [FieldError("metadata.name", f"TrainJob {name!r} already exists in {self.root}")]
            )
        metadata.setdefault("namespace", "default")
        if runtime_manifest is None:
            reference = manifest.get("spec", {}).get("runtimeRef") or {}
            runtime_manifest = self._runtime_manifest(
                str(reference.get("kind") or constants.CLUSTER_TRAINING_RUNTIME_KIND),
                str(reference.get("name", "")),
                str(metadata["namespace"]),
            )
        metadata["creationTimestamp"] = _now().isoformat()
        planned = planning.plan_trainjob(manifest, runtime_manifest, _now())
        deadline = (manifest.get("spec") or {}).get("activeDeadlineSeconds")
        local_plan = compiler.compile_plan(
            planned.jobset,
            planned.others,
            job_dir,
            isolated=isolation.available(),
            gpus=devices.nvidia_gpus(),
            job_env=job_env.job_env_names(os.environ, bool(packages)),
            active_deadline_seconds=deadline,
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
                "volumes in local directories, not at %s: those paths (and pod host names) are "
                "rewritten in each container's command and env only (a path in func_args, built "
                "in code or read from a file names this machine's path)",
                name,
                ", ".join(paths),
            )
        make_private_dir(self.root)
        job_dir.path.mkdir(mode=0o700)
        # Held from here on, by this client and then by the supervisor: a job whose lock is free
        # and that has not finished has died (see _read).
        lock = hold_lock(job_dir.supervisor_lock)
        try:
            write_json(job_dir.runtime, runtime_manifest)
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
            write_json(job_dir.trainjob, manifest)  # last: the job exists once complete on disk
            self._start_supervisor(job_dir, lock)
        finally:
            os.close(lock)
        return name

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
        with open_private(job_dir.supervisor_log) as log:
            process = subprocess.Popen(
                command,
                stdin=subprocess.PIPE if stop_on_exit else subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                pass_fds=(lock,),
            )
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
        state = load_state(job_dir)
        manifest["status"] = state.get("trainjob") or {}
        ended = bool(state.get("finished"))
        pods = [
            PodView(
                pod["name"],
                pod["step"],
                # A job that has ended has ended every process it started: a pod it still
                # records as Running was stopped with it.
                constants.POD_FAILED
                if ended and pod["phase"] == constants.POD_RUNNING
                else pod["phase"],
                pod.get("device", constants.UNKNOWN),
                pod.get("device_count", constants.UNKNOWN),
            )
            for pod in state.get("pods", [])
        ]
        progress = read_json(job_dir.progress) if job_dir.progress.is_file() else None
        runtime = read_json(job_dir.runtime)
        job = to_train_job(
            manifest, runtime_from_manifest(runtime), pods, progress, _output(job_dir, runtime)
        )
        if job.checkpoint is None:  # locally the checkpoint metrics are in the history
            job.checkpoint = checkpoint_status(latest_values(read_history(job_dir.metrics)))
        if ended and job.status not in (
            constants.TRAINJOB_COMPLETE,
            constants.TRAINJOB_FAILED,
            constants.TRAINJOB_STOPPED,
            constants.TRAINJOB_SUSPENDED,
        ):
            job.status = constants.TRAINJOB_FAILED
            job.message = job.message or _jobset_message(state)
        restarts = int((state.get("jobset") or {}).get("restarts") or 0)
        if restarts:  # the JobSet's restarts, as its status counts them
            counted = f"{restarts} restart{'s' if restarts > 1 else ''}"
            job.message = f"{job.message} ({counted})" if job.message else counted
        return job

    def get_job(self, name: str) -> types.TrainJob:
        return self._read(self._job_dir(name))

    def list_jobs(self, runtime: types.Runtime | None = None) -> list[types.TrainJob]:
        jobs = []
        for path in sorted(self.root.iterdir()):
            if path.name.startswith(".") or not (path / "trainjob.json").is_file():
                continue
            try:
                job = self._read(JobDir(self.root, path.name))
            except (OSError, ValueError) as error:  # one damaged directory hides only itself
                _logger.warning("skipping %s: %s", path, error)
                continue
            if runtime is None or job.runtime.name == runtime.name:
                jobs.append(job)
        return sorted(jobs, key=lambda job: job.creation_timestamp)

    def get_job_logs(
        self, name: str, step: str = constants.NODE + "-0", follow: bool = False
    ) -> Iterator[str]:
        job_dir = self._job_dir(name)
        steps = [pod["step"] for pod in load_state(job_dir).get("pods", [])]
        if step not in steps:
            raise ValueError(
                f"step: TrainJob {name!r} has no step {step!r}; its steps are {', '.join(steps)}"
            )
        return _follow(job_dir, step) if follow else _read_lines(job_dir.log(step))

    def get_job_events(self, name: str) -> list[types.Event]:
        job_dir = self._job_dir(name)
        state = load_state(job_dir)
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

    # -- suspending -----------------------------------------------------------------------------
    def suspend_job(self, name: str, suspend: bool) -> None:
        """``spec.suspend``: True ends the job's pods with SIGTERM (checkpointing ranks save),
        False starts the suspended job again (``suspension``)."""
        suspension.set_suspended(self, name, suspend)

    # -- ending ---------------------------------------------------------------------------------
    def stop_job(self, name: str) -> None:
        """End the job's processes and keep it (Stopped, with its logs and metrics); a job that
        has already ended keeps its outcome."""
        job_dir = self._job_dir(name)
        ended = (constants.TRAINJOB_COMPLETE, constants.TRAINJOB_FAILED, constants.TRAINJOB_STOPPED)
        if self._read(job_dir).status not in ended:
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


def load_state(job_dir: JobDir) -> dict[str, Any]:
    """``state.json`` as readers must see it: a job that has not finished and whose lock nobody
    holds any more (its supervisor, guardian and submitting client are gone) has Failed."""
    state = _read_state(job_dir)
    if state.get("finished") or lock_held(job_dir.supervisor_lock):
        return state
    state = _read_state(job_dir)  # what it wrote last before letting go
    if not state.get("finished"):
        message = (
            f"the job's supervisor ended before the job did; see {job_dir.supervisor_log}"
            if state
            else "the job was never started: its submission was interrupted"
        )
        record_failure(state, SUPERVISOR_LOST, message)
    return state


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
    return bool(load_state(job_dir).get("finished"))


def _file_identity(path: Path) -> tuple[int, int] | None:
    """What changes when ``write_json`` replaces ``path``: its inode and modification time."""
    try:
        status = path.stat()
    except FileNotFoundError:
        return None
    return status.st_ino, status.st_mtime_ns


def _jobset_message(state: dict[str, Any]) -> str | None:
    for condition in (state.get("jobset") or {}).get("conditions") or []:
        return f"{condition.get('reason')}: {condition.get('message')}"
    return None


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
