"""The local backend: TrainJobs built by the runtime framework, JobSets run as processes."""

from __future__ import annotations

import atexit
import logging
import shutil
import subprocess
import sys
import time
import weakref
from collections.abc import Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from trainer_sdk import constants, types
from trainer_sdk.backends.base import AnyTrainer, RuntimeBackend
from trainer_sdk.backends.local import mpi
from trainer_sdk.backends.local import pods as pod_plan
from trainer_sdk.backends.local.jobdir import JobDir, read_json, write_json
from trainer_sdk.backends.local.runner import end_process_group
from trainer_sdk.configs import LocalBackendConfig
from trainer_sdk.errors import InvalidTrainJobError, JobNotFoundError, RuntimeNotFoundError
from trainer_sdk.jobs import PodView, to_train_job
from trainer_sdk.options import Option
from trainer_sdk.runtimes import runtime_from_manifest
from trainer_sdk.trainjobs import build_trainjob_manifest, generate_name

__all__ = ["LocalBackend"]

_logger = logging.getLogger(__name__)
FOLLOW_INTERVAL_SECONDS = 0.05
# How often waiting checks whether the job's state changed: a stat, cheap enough to be prompt.
STATE_CHECK_SECONDS = 0.01
STOP_TIMEOUT_SECONDS = 15.0


def _now() -> datetime:
    return datetime.now(timezone.utc)


class LocalBackend(RuntimeBackend):
    """Jobs run on this machine and live on disk under ``config.root``."""

    def __init__(self, config: LocalBackendConfig | None = None) -> None:
        self.config = config or LocalBackendConfig()
        self.root = Path(self.config.root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._supervisors: dict[str, subprocess.Popen[bytes]] = {}
        self._runtimes: dict[str, dict[str, Any]] | None = None
        atexit.register(_release, weakref.ref(self))

    # -- runtimes -------------------------------------------------------------------------------
    def _runtime_manifests(self) -> dict[str, dict[str, Any]]:
        if self._runtimes is None:
            from trainer_sdk.backends.local.planning import builtin_runtime_manifests

            self._runtimes = builtin_runtime_manifests()
        return self._runtimes

    def get_runtime_packages(self, runtime: types.Runtime) -> None:
        """Print the packages of this Python environment, which every local job runs in."""
        self.get_runtime(runtime.name)
        subprocess.run([sys.executable, "-m", "pip", "list"], check=True)

    # -- creating -------------------------------------------------------------------------------
    def train(
        self,
        runtime: types.Runtime | None = None,
        initializer: types.Initializer | None = None,
        trainer: AnyTrainer | None = None,
        options: Sequence[Option] | None = None,
    ) -> str:
        runtime = runtime or self.get_runtime(constants.DEFAULT_TRAINING_RUNTIME)
        if not isinstance(runtime, types.Runtime):
            raise ValueError(
                f"runtime: expected a Runtime from list_runtimes() or get_runtime(), "
                f"got {runtime!r}"
            )
        runtime_manifest = self._runtime_manifests().get(runtime.name)
        if runtime_manifest is None:
            raise RuntimeNotFoundError(runtime.name, list(self._runtime_manifests()))
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
        from trainer_sdk.backends.local import planning

        runtime_manifest = runtime

        metadata = manifest.setdefault("metadata", {})
        name = metadata.setdefault("name", generate_name())
        job_dir = JobDir(self.root, name)
        if job_dir.path.exists():
            raise InvalidTrainJobError(
                [f"metadata.name: TrainJob {name!r} already exists in {self.root}"]
            )
        if runtime_manifest is None:
            runtime_name = (manifest.get("spec", {}).get("runtimeRef") or {}).get("name", "")
            if runtime_name not in self._runtime_manifests():
                raise RuntimeNotFoundError(runtime_name, list(self._runtime_manifests()))
            runtime_manifest = self._runtime_manifests()[runtime_name]
        metadata.setdefault("namespace", "default")
        metadata["creationTimestamp"] = _now().isoformat()
        planned = planning.plan_trainjob(manifest, runtime_manifest, _now())
        expanded = pod_plan.expand_pods(planned.jobset, pod_plan.DEFAULT_MASTER_PORT)
        mpi.check_mpi_pods(expanded, planned.jobset, planned.others)
        pods = [pod for _, group in expanded for pod in group]
        job_dir.path.mkdir(parents=True)
        write_json(job_dir.trainjob, manifest)
        write_json(job_dir.runtime, runtime_manifest)
        write_json(job_dir.jobset, planned.jobset)
        write_json(
            job_dir.state,
            {
                "objects": planned.others,
                "packages": list(packages),
                "pipIndexUrls": list(pip_index_urls),
                "pods": [
                    {
                        "name": pod.name,
                        "step": pod.step,
                        "phase": constants.POD_PENDING,
                        "device": pod.device,
                        "device_count": pod.device_count,
                    }
                    for pod in pods
                ],
                "events": [],
                "finished": False,
            },
        )
        self._start_supervisor(job_dir)
        return name

    def _start_supervisor(self, job_dir: JobDir) -> None:
        command = [sys.executable, "-m", "trainer_sdk.backends.local.supervisor", str(job_dir.path)]
        if self.config.python:
            command += ["--python", self.config.python]
        if self.config.detach:
            command.append("--detach")
        with open(job_dir.supervisor_log, "ab") as log:
            process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL if self.config.detach else subprocess.PIPE,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        job_dir.supervisor_pid.write_text(str(process.pid))
        if not self.config.detach:
            self._supervisors[job_dir.name] = process

    # -- reading --------------------------------------------------------------------------------
    def _job_dir(self, name: str) -> JobDir:
        try:
            job_dir = JobDir(self.root, name)
        except ValueError:
            raise JobNotFoundError(name, str(self.root)) from None
        if not job_dir.exists():
            raise JobNotFoundError(name, str(self.root))
        return job_dir

    def _read(self, job_dir: JobDir) -> types.TrainJob:
        manifest = read_json(job_dir.trainjob)
        state = read_json(job_dir.state)
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
        job = to_train_job(
            manifest, runtime_from_manifest(read_json(job_dir.runtime)), pods, progress
        )
        if state.get("finished") and job.status not in (
            constants.TRAINJOB_COMPLETE,
            constants.TRAINJOB_FAILED,
        ):
            job.status = constants.TRAINJOB_FAILED
            job.message = job.message or _jobset_message(state)
        return job

    def get_job(self, name: str) -> types.TrainJob:
        return self._read(self._job_dir(name))

    def list_jobs(self, runtime: types.Runtime | None = None) -> list[types.TrainJob]:
        jobs = []
        for path in sorted(self.root.iterdir()):
            if path.name.startswith(".") or not (path / "trainjob.json").is_file():
                continue
            job = self._read(JobDir(self.root, path.name))
            if runtime is None or job.runtime.name == runtime.name:
                jobs.append(job)
        return sorted(jobs, key=lambda job: job.creation_timestamp)

    def get_job_logs(
        self, name: str, step: str = constants.NODE + "-0", follow: bool = False
    ) -> Iterator[str]:
        job_dir = self._job_dir(name)
        steps = [pod["step"] for pod in read_json(job_dir.state).get("pods", [])]
        if step not in steps:
            raise ValueError(
                f"step: TrainJob {name!r} has no step {step!r}; its steps are {', '.join(steps)}"
            )
        return _follow(job_dir, step) if follow else _read_lines(job_dir.log(step))

    def get_job_events(self, name: str) -> list[types.Event]:
        state = read_json(self._job_dir(name).state)
        return [
            types.Event(
                involved_object_kind=event["kind"],
                involved_object_name=event["object"],
                message=event["message"],
                reason=event["reason"],
                event_time=datetime.fromisoformat(event["time"]),
            )
            for event in state.get("events", [])
        ]

    def _pause(self, name: str, seconds: float) -> None:
        """Return as soon as the supervisor rewrites the job's state (a new file each time),
        whatever ``polling_interval`` the caller chose; a stat per check, no parsing."""
        state = self._job_dir(name).state
        before = _file_identity(state)
        deadline = time.monotonic() + seconds
        while _file_identity(state) == before and time.monotonic() < deadline:
            time.sleep(STATE_CHECK_SECONDS)

    # -- ending ---------------------------------------------------------------------------------
    def delete_job(self, name: str) -> None:
        job_dir = self._job_dir(name)
        self._stop(job_dir)
        shutil.rmtree(job_dir.path)

    def _stop(self, job_dir: JobDir) -> None:
        """End the supervisor and every pod's process group; wait until they are gone."""
        supervisor = self._supervisors.pop(job_dir.name, None)
        if (
            supervisor is not None
        ):  # our child: signal it and reap it (a zombie still has its group)
            if supervisor.poll() is None:
                supervisor.terminate()
            try:
                supervisor.wait(timeout=STOP_TIMEOUT_SECONDS)
            except subprocess.TimeoutExpired:
                end_process_group(supervisor.pid, grace=0)
                supervisor.wait()
        elif job_dir.supervisor_pid.is_file():
            end_process_group(int(job_dir.supervisor_pid.read_text()), grace=STOP_TIMEOUT_SECONDS)
        for pod in read_json(job_dir.state).get("pods", []):
            if pod.get("pid") and pod.get("phase") == constants.POD_RUNNING:
                end_process_group(int(pod["pid"]))

    def close(self) -> None:
        """End the jobs this client started (unless detached) and wait for their supervisors."""
        supervisors, self._supervisors = self._supervisors, {}
        for process in supervisors.values():
            if process.stdin:
                process.stdin.close()
        for process in supervisors.values():
            try:
                process.wait(timeout=STOP_TIMEOUT_SECONDS)
            except subprocess.TimeoutExpired:
                end_process_group(process.pid)


def _file_identity(path: Path) -> tuple[int, int] | None:
    """What changes when ``write_json`` replaces ``path``: its inode and modification time."""
    try:
        status = path.stat()
    except FileNotFoundError:
        return None
    return status.st_ino, status.st_mtime_ns


def _finished(job_dir: JobDir) -> bool:
    return bool(read_json(job_dir.state).get("finished"))


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
        finished = _finished(job_dir)
        if path.is_file():
            with open(path, errors="replace") as stream:
                stream.seek(position)
                chunk = stream.read()
                position = stream.tell()
            pending += chunk
            *lines, pending = pending.split("\n")
            yield from lines
        if finished:
            if pending:
                yield pending
            return
        time.sleep(FOLLOW_INTERVAL_SECONDS)


def _release(reference: weakref.ref[LocalBackend]) -> None:
    backend = reference()
    if backend is not None:
        backend.close()
