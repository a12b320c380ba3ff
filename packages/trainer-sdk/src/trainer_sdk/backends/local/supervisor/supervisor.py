"""The process that runs one local job: ``python -m trainer_sdk.backends.local.supervisor JOB_DIR``.

It executes the job's plan (``plan.json``, compiled at submit: ``plan``), playing the JobSet
controller and the kubelet for the job's JobSet (``runner``); it decides only the values that
exist once the job runs: the rendezvous and SSH ports, the data cache's endpoint once it serves,
and the installed packages' paths. After each change it feeds the JobSet status back into the
runtime framework's ``build`` for the TrainJob's status, which it writes to ``state.json``.
Unless started with ``--detach`` it ends the job when its standard input closes, i.e. when the
client that started it exits, however it exits.

Containment: the supervisor is a child subreaper, so whatever its pods start stays below it, and
every process of the job carries the job's token (``processes``). When the job ends, however it
ends, nothing of it is left running: the runner ends each attempt, and a final sweep ends what
remains below the supervisor or carries the token. A supervisor that fails records the job as
Failed; the process the client started is its ``guardian``, so that killing either of the two
still ends the job. Both hold the job's ``supervisor.lock`` (handed over by the client,
``--lock-fd``) for their whole life.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import traceback
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Final

from trainer_sdk.backends.local import packages, suspension
from trainer_sdk.backends.local.jobdir import JobDir, read_json, write_json
from trainer_sdk.backends.local.plan import LateValue, from_document
from trainer_sdk.backends.local.pod import torchrun_shim
from trainer_sdk.backends.local.submit.pods import TERMINATION_GRACE_SECONDS
from trainer_sdk.backends.local.supervisor import caches, cgroups, job_env, mpi, processes
from trainer_sdk.backends.local.supervisor.guardian import (
    SUPERVISOR_LOST,
    fork_supervisor,
    record_failure,
)
from trainer_sdk.backends.local.supervisor.runner import JobSetRunner, PodState
from trainer_sdk.training.engines import ENGINES

__all__ = ["main", "write_shims"]

_SHIMS = {
    "python": 'exec "{python}" "$@"',
    "python3": 'exec "{python}" "$@"',
    # One process per node runs without torchrun's agent (see torchrun_shim).
    "torchrun": f'exec "{{python}}" "{torchrun_shim.__file__}" "$@"',
    "data-cache": 'exec "{python}" -m trainer_data_cache "$@"',
    "mpi-launch": 'exec "{python}" -c "import sys; from mpi_runtime.launches import main; '
    'sys.exit(main())" "$@"',
    "mpi-worker": 'exec "{python}" -c "from mpi_runtime.workers import main; main()" "$@"',
    # The fine-tuning engines' commands (``tune``): their module, run by the job's Python.
    **{
        command: f'exec "{{python}}" -m {module} "$@"'
        for engine in ENGINES
        for command, module in engine.commands.items()
    },
}


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def write_shims(directory: Path, python: str) -> None:
    """``python``, ``python3``, ``torchrun``, ``data-cache``, ``mpi-launch``, ``mpi-worker`` and
    the engines' commands (``tune``), which run the client's interpreter."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, body in _SHIMS.items():
        path = directory / name
        path.write_text(f"#!/bin/sh\n{body.format(python=python)}\n")
        path.chmod(0o755)


def _now() -> datetime:
    return datetime.now(timezone.utc)


class Supervisor:
    """Runs the job in ``job_dir`` and keeps ``state.json`` current."""

    def __init__(self, job_dir: JobDir, python: str, guardian: int | None = None) -> None:
        self.job_dir = job_dir
        self.guardian = guardian
        self.python = python
        self.trainjob = read_json(job_dir.trainjob)
        self.runtime = read_json(job_dir.runtime)
        self.jobset = read_json(job_dir.jobset)
        self.plan = from_document(read_json(job_dir.plan))
        self.state: dict[str, Any] = read_json(job_dir.state)
        self.token: str = self.state["token"]
        self.cgroup = Path(self.state["cgroup"]) if self.state.get("cgroup") else None
        # Processes below this one that are not the job's pods (the data cache).
        self.keep: set[int] = set()
        self.lock = threading.Lock()

    def _environment(self) -> dict[str, str]:
        shims = self.job_dir.path / "bin"
        write_shims(shims, self.python)
        paths: job_env.PackagePaths | None = None
        requested = self.plan.packages
        if requested.requirements:
            steps = dict.fromkeys(pod.step for pod in self.plan.pods())
            installed = packages.install_missing(
                self.job_dir.root / packages.CACHE_DIR,
                self.python,
                requested,
                self.plan.pip_index_urls,
                [self.job_dir.log(step) for step in steps],
                self._package_event,
            )
            paths = (installed, []) if requested.isolated else ([], installed)
        return job_env.job_env(
            os.environ,
            shims=shims,
            progress=self.job_dir.progress,
            token=self.token,
            package_paths=paths,
        )

    def _event(self, kind: str, name: str, reason: str, message: str, attempt: int) -> None:
        self.state.setdefault("events", []).append(
            {
                "kind": kind,
                "object": name,
                "reason": reason,
                "time": _now().isoformat(),
                "message": message,
                "attempt": attempt,
            }
        )

    def _package_event(self, reason: str, message: str) -> None:
        """An event of the job's packages (see ``packages.install_missing``)."""
        with self.lock:
            name = str(self.trainjob["metadata"]["name"])
            self._event("TrainJob", name, reason, message, 0)
            write_json(self.job_dir.state, self.state)

    def _events(self, status: dict[str, Any], pods: list[PodState]) -> None:
        """An event per pod phase change of each attempt, and one per JobSet restart."""
        events = self.state.get("events", [])
        seen = {(event["object"], event["reason"], event.get("attempt", 0)) for event in events}
        restarts = int(status.get("restarts") or 0)
        attempt = suspension.attempt_offset(self.state) + restarts  # a resumed job counts on
        name = str(self.jobset.get("metadata", {}).get("name", ""))
        if restarts and (name, "Restarting", attempt) not in seen:
            budget = self.plan.max_restarts
            self._event(
                "JobSet", name, "Restarting", f"restart {restarts} of maxRestarts {budget}", attempt
            )
        for pod in pods:
            reason = {"Running": "Started", "Succeeded": "Completed", "Failed": "Failed"}.get(
                pod.phase
            )
            if reason and (pod.name, reason, attempt) not in seen:
                detail = f" with exit code {pod.exit_code}" if pod.exit_code is not None else ""
                where = f" (restart {attempt})" if attempt else ""
                message = f"step {pod.step}: {reason.lower()}{detail}{where}"
                self._event("Pod", pod.name, reason, message, attempt)

    def report(self, status: dict[str, Any], pods: list[PodState]) -> None:
        """Write the JobSet status, the pods, and the TrainJob status derived by ``build``."""
        from trainer_sdk.backends.local.submit import planning

        with _TERMINATION.held(), self.lock:
            self.state["jobset"] = status
            self.state["pods"] = [vars(pod) for pod in pods]
            self._events(status, pods)
            derived = planning.trainjob_status(
                self.trainjob,
                self.runtime,
                {**self.jobset, "status": status},
                self.state.get("objects") or [],
                _now(),
                self.state.get("trainjob"),
            )
            if derived is not None:
                self.state["trainjob"] = derived
                self._stopped_event(derived)
            suspension.on_report(self.state, status, str(self.trainjob["metadata"]["name"]))
            write_json(self.job_dir.state, self.state)

    def _stopped_event(self, trainjob_status: dict[str, Any]) -> None:
        """The TrainJob's ``Stopped`` event, once, when its Failed condition says it was stopped
        (``stop_job``, or the client that started it ended: Ctrl-C)."""
        reasons = {
            c.get("reason")
            for c in trainjob_status.get("conditions") or []
            if c.get("type") == "Failed"
        }
        name = str(self.trainjob["metadata"]["name"])
        events = self.state.get("events", [])
        if "Stopped" in reasons and not any(event["reason"] == "Stopped" for event in events):
            self._event(
                "TrainJob", name, "Stopped", "the job was stopped; its logs and metrics are kept", 0
            )

    def fail(self, reason: str, message: str) -> None:
        """Record a failure that happened before, around or instead of the pods."""
        with self.lock:
            record_failure(self.state, reason, message)
            write_json(self.job_dir.state, self.state)

    def run(self, detach: bool) -> int:
        """Run the JobSet to its end; 0 when it completed."""
        try:
            env = self._environment()
        except (RuntimeError, OSError) as error:
            self.fail("PackageInstallFailed", str(error))
            return 1
        signal.signal(signal.SIGTERM, _TERMINATION.handle)
        values: dict[LateValue, str] = {}
        cache = None
        try:
            if self.plan.cache is not None:
                try:
                    cache, values[LateValue.CACHE_ENDPOINT] = caches.start_cache(
                        [self.python, "-m", "trainer_data_cache", *self.plan.cache.args],
                        self.job_dir.log(caches.CACHE_LOG_STEP),
                        {
                            **env,
                            **self.plan.cache.env,
                            processes.JOB_TOKEN_ENV: f"{self.token}.cache",
                        },
                    )
                except caches.CacheStartError as error:
                    self.fail("DataCacheFailed", str(error))
                    return 1
                self.keep.add(cache.pid)
            final = self._run_jobset(values, env, detach)
        except _TerminatedError:  # while the cache was starting
            self.fail(*self._termination())
            return 1
        finally:
            if cache is not None:
                _end_cache(cache, f"{self.token}.cache")
        with self.lock:
            self.state["finished"] = True
            write_json(self.job_dir.state, self.state)
        return 0 if final.get("terminalState") == "Completed" else 1

    def _termination(self) -> tuple[str, str]:
        """Why SIGTERM arrived: the job was stopped or deleted (through the guardian), or the
        guardian died."""
        if self.guardian is None or os.getppid() == self.guardian:
            if self.job_dir.stop_requested.exists():
                return "Stopped", "the job was stopped; its logs and metrics are kept"
            return "Deleted", "the job was deleted"
        return SUPERVISOR_LOST, f"the job's guardian process (pid {self.guardian}) was killed"

    def _terminated_condition(self) -> tuple[str, str, str]:
        """The JobSet condition after SIGTERM: Failed when stopped or when the guardian died,
        else Suspended (``spec.suspend``) or Preempted (``suspension``)."""
        reason, message = self._termination()
        if reason == "Deleted":
            return suspension.termination(self.job_dir)
        return "Failed", reason, message

    def _adopted(self) -> list[processes.ProcessIdentity]:
        """Orphans of the pods that this process (a subreaper) adopted."""
        me = processes.ProcessIdentity.of(os.getpid())
        return processes.find([me] if me else [], keep=self.keep, cgroup=self.cgroup)

    def _run_jobset(self, values: dict[LateValue, str], env: dict[str, str], detach: bool) -> Any:
        """Run the plan's pods to the end with the run's late ``values`` (the cache's endpoint)
        and ports chosen now; the final status."""
        values[LateValue.MASTER_PORT] = str(free_port())
        if self.plan.mpi is not None:
            values[LateValue.SSH_PORT] = str(mpi.free_ssh_port())
        runner = JobSetRunner(self.plan, self.job_dir, env, values, self.report, self._adopted)
        runner.first_attempt = suspension.attempt_offset(self.state)
        if not detach:
            threading.Thread(target=_stop_when_parent_exits, args=(runner,), daemon=True).start()
        try:
            return runner.run(suspended=bool(self.jobset.get("spec", {}).get("suspend")))
        except _TerminatedError:
            runner.end_all()
            return runner.publish(self._terminated_condition())
        finally:
            runner.end_all()


def _end_cache(cache: subprocess.Popen[bytes], token: str) -> None:
    identity = processes.ProcessIdentity.of(cache.pid)
    roots = [identity] if identity is not None else []
    processes.terminate(
        lambda: processes.find(roots, token, scoped=True), TERMINATION_GRACE_SECONDS
    )


class _TerminatedError(BaseException):
    """SIGTERM arrived: the job is being deleted (a BaseException, as KeyboardInterrupt: code that
    handles ``Exception`` must not take it for its own failure)."""


class _Termination:
    """SIGTERM's handler: raises ``_TerminatedError`` where the main thread is, except inside a
    ``held()`` section (a status report), which raises it when it ends. Raised in the middle of a
    report, it met pydantic building the API models' schemas (their first import), which turned
    it into a SchemaError: the job read SupervisorFailed instead of why it ended."""

    def __init__(self) -> None:
        self._depth = 0
        self._pending = False

    def handle(self, signum: int, frame: object) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the first one ends the job; ignore repeats
        if self._depth:
            self._pending = True
            return
        raise _TerminatedError

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """A section SIGTERM does not interrupt (in the main thread, where it is handled)."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
            if not self._depth and self._pending:
                self._pending = False
                raise _TerminatedError


_TERMINATION: Final = _Termination()


def _stop_when_parent_exits(runner: JobSetRunner) -> None:
    sys.stdin.buffer.read()
    runner.stop()


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    parser = argparse.ArgumentParser(prog="trainer-sdk-supervisor")
    parser.add_argument("job_dir", type=Path)
    parser.add_argument("--detach", action="store_true")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--lock-fd", type=int, default=None)
    args = parser.parse_args(argv)
    if args.lock_fd is not None:  # held for life, never handed on to the pods
        os.set_inheritable(args.lock_fd, False)
    job_dir = JobDir(args.job_dir.parent, args.job_dir.name)
    token = read_json(job_dir.state)["token"]
    guardian = fork_supervisor(job_dir, token)
    if guardian is None:  # the guardian, after the supervisor and everything of the job ended
        return 0
    supervisor = Supervisor(job_dir, args.python, guardian)
    me = processes.ProcessIdentity.of(os.getpid())
    code = 1
    try:
        code = supervisor.run(args.detach)
    except _TerminatedError:  # outside the places that expect it: still the job's end
        supervisor.fail(*supervisor._termination())
    except BaseException as error:  # whatever it was, the job must read Failed
        traceback.print_exc()
        supervisor.fail("SupervisorFailed", f"the job's supervisor failed: {error!r}")
    finally:
        # Nothing of the job outlives it: what is still below this process (orphans it adopted
        # as a subreaper) or carries the job's token.
        processes.terminate(
            lambda: processes.find([me] if me else [], token, cgroup=supervisor.cgroup),
            TERMINATION_GRACE_SECONDS,
        )
        processes.reap_adopted()
        if supervisor.cgroup is not None and cgroups.leave(supervisor.cgroup):
            cgroups.remove(supervisor.cgroup)  # also when the guardian is gone
    return code
