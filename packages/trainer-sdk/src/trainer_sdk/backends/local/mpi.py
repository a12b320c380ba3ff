"""MPI JobSets on this machine: the launcher and worker pods of ``mlPolicy.mpi`` as processes.

A JobSet is an MPI JobSet when its ``launcher`` mounts an SSH-auth Secret of the Plan. Then:

- the Plan's Secrets and ConfigMaps are written into the volume directories that mount them
  (``<job>/volumes/<volume>``), with the modes of the volume (the private key 0640, as
  upstream; ssh and sshd get a 0600 copy from ``mpi_runtime.private_identity``);
- every pod gets a loopback address: the launcher ``localhost`` (mpirun runs its ranks itself),
  the workers ``127.0.0.2``, ``127.0.0.3``, ... in pod order; the pod host names of the JobSet in
  the hostfile become those addresses, so rank ``r`` still runs on ``hosts[r // slots]``;
- a worker runs ``mpi-worker``: an sshd with the job's key on its address and the job's SSH port
  (one free port per job, so jobs run side by side);
- the launcher's ``mpirun [options] CMD`` (or ``mpi-launch [options] -- CMD``, or
  ``deepspeed --launcher openmpi|mpich|impi [options] SCRIPT``: the mpirun line DeepSpeed's
  runner would build, binding and mapping options dropped; ``mpi_runtime.to_mpi_launch``
  translates it) runs as
  ``mpi-launch --loopback --rank-env --ssh-port P --ssh-dir D [options] -- CMD``: it waits for the
  workers' sshd, pins MPI to ``lo`` (``btl self,tcp``), gives every rank RANK, WORLD_SIZE,
  LOCAL_RANK, MASTER_ADDR and MASTER_PORT (the job's port), and forwards the pod's env (PATH
  with the interpreter shims, the TrainJob's env) to ranks started over ssh;
- ranks that have not started within ``mpi-launch``'s start timeout (60 s; the TrainJob's env
  may set ``MPI_LAUNCH_START_TIMEOUT``) make it stop mpirun and fail, naming their hosts in the
  launcher pod's termination log, which the runner puts in the pod's failure message;
- ranks find ``python`` in ``<job>/mpi-bin`` first, where it runs Python programs through
  ``python -m mpi4py`` (as ``mpi-launch`` does for a Python command), so that a rank that raises
  aborts the job instead of leaving the others waiting in a collective; the SDK's script is a
  ``bash -c`` that ``mpi-launch`` cannot see into;
- the MPI user's home (``DEFAULT_MPI_USER_HOME``, where the SDK writes the training script) is
  ``<job>/home``, shared by the job's pods.

Other replicated jobs (initializers) run as they are. ``localize_mpi_pods`` is pure;
``write_config_volumes``, ``write_rank_shims`` and ``free_ssh_port`` do the I/O, and
``prepare_mpi_pods`` drives them.
"""

from __future__ import annotations

import base64
import re
import shutil
import socket
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

import mpi_runtime

from trainer_sdk import constants
from trainer_sdk.backends.local import pods as pod_plan
from trainer_sdk.backends.local.jobdir import JobDir
from trainer_sdk.progress import STATUS_FILE_ENV

__all__ = [
    "LINE_BUFFERED_MPI4PY",
    "RANK_LOG_ENV",
    "PodPlan",
    "check_mpi_pods",
    "free_ssh_port",
    "host_addresses",
    "is_mpi_jobset",
    "localize_mpi_pods",
    "map_hosts",
    "prepare_mpi_pods",
    "write_config_volumes",
    "write_rank_shims",
]

SSH_AUTH_SECRET_TYPE: Final = "kubernetes.io/ssh-auth"
LAUNCHER_HOST: Final = "localhost"
FIRST_WORKER_ADDRESS: Final = 2  # 127.0.0.2: the first worker's loopback address
WAIT_TIMEOUT_SECONDS: Final = 60  # how long mpi-launch waits for the workers' sshd
DEFAULT_FILE_MODE: Final = 0o644
# Env the ranks started over ssh need to run like the launcher's own: the interpreter shims,
# the job's packages, unbuffered output and the progress file.
LOCAL_ENV: Final = (
    "PATH",
    "SHLVL",
    "PYTHONPATH",
    "PYTHONUNBUFFERED",
    "LD_LIBRARY_PATH",
    # Where torch builds JIT extensions (DeepSpeed's CPU ops): without it a rank on a worker host
    # built in the shared ~/.cache/torch_extensions, and a killed build's lock stalled later runs.
    "TORCH_EXTENSIONS_DIR",
    STATUS_FILE_ENV,
    constants.PACKAGES_READY_ENV,
)
# Not forwarded: set per rank by mpi-launch, or by the pod, or read by mpirun alone.
NOT_FORWARDED: Final = frozenset({"HOSTNAME", "MASTER_ADDR", "MASTER_PORT", "HOME"})
MPI_ENV_PREFIXES: Final = ("OMPI_", "PRTE_", "PMIX_", "I_MPI_", "HYDRA_")
# Python programs run through mpi4py; ``-m mpi4py`` itself (mpi-launch's wrapping) is left alone.
# mpirun forwards each write of a rank as it comes, so a line written in two pieces (print() of
# an unbuffered stream writes the text, then the newline) can be cut by another rank's line:
# ranks run mpi4py with stdout and stderr line-buffered, one write per whole line.
LINE_BUFFERED_MPI4PY: Final = (
    "import sys; "
    "[s.reconfigure(line_buffering=True, write_through=False) for s in (sys.stdout, sys.stderr)]; "
    "from mpi4py.run import main; main()"
)
# The launcher's step log, where Python ranks (a process mpirun started: its rank variable set)
# append their output themselves, whole lines with O_APPEND: mpirun forwards a rank's output in
# the chunks it reads, and under load a chunk can end mid-line. Unset for what a rank starts, so
# that a ``python`` whose output the rank captures keeps it.
RANK_LOG_ENV: Final = "TRAINER_SDK_RANK_LOG"
_RANK_PYTHON: Final = """#!/bin/sh
if [ -n "${{TRAINER_SDK_RANK_LOG:-}}" ] && [ -n "${{OMPI_COMM_WORLD_RANK:-}}${{PMI_RANK:-}}" ]; then
  exec >>"$TRAINER_SDK_RANK_LOG" 2>&1; unset TRAINER_SDK_RANK_LOG
fi
if [ "$1" = -m ] && [ "$2" = mpi4py ]; then shift 2; exec "{python}" -c '{line_buffered}' "$@"; fi
case "$1" in -m|-c|[!-]*) exec "{python}" -c '{line_buffered}' "$@" ;; esac
exec "{python}" "$@"
"""

# Replicated jobs in start order, each with its pods (what ``pods.expand_pods`` returns).
PodPlan = list[tuple[dict[str, Any], list[pod_plan.LocalPod]]]


def _pod_spec(job: Mapping[str, Any]) -> Mapping[str, Any]:
    return job.get("template", {}).get("spec", {}).get("template", {}).get("spec", {}) or {}


def _ssh_secrets(objects: Sequence[Mapping[str, Any]]) -> set[str]:
    return {
        obj["metadata"]["name"]
        for obj in objects
        if obj.get("kind") == "Secret" and obj.get("type") == SSH_AUTH_SECRET_TYPE
    }


def _ssh_volume(jobset: Mapping[str, Any], objects: Sequence[Mapping[str, Any]]) -> str | None:
    """The launcher's volume that mounts the Plan's SSH-auth Secret (None: not an MPI JobSet)."""
    secrets = _ssh_secrets(objects)
    for job in jobset.get("spec", {}).get("replicatedJobs") or []:
        if job.get("name") != constants.LAUNCHER:
            continue
        for volume in _pod_spec(job).get("volumes") or []:
            if (volume.get("secret") or {}).get("secretName") in secrets:
                return str(volume["name"])
    return None


def is_mpi_jobset(jobset: Mapping[str, Any], objects: Sequence[Mapping[str, Any]]) -> bool:
    """Whether the launcher of ``jobset`` mounts an SSH-auth Secret from ``objects``."""
    return _ssh_volume(jobset, objects) is not None


def host_addresses(plan: PodPlan) -> dict[str, str]:
    """Pod name -> its loopback address: the launcher ``localhost``, the ``node`` pods (workers)
    127.0.0.2, ... in order."""
    addresses: dict[str, str] = {}
    workers = 0
    for job, pods in plan:
        for pod in pods:
            if job["name"] == constants.LAUNCHER:
                addresses[pod.name] = LAUNCHER_HOST
            elif job["name"] == constants.NODE:
                workers += 1
                address = FIRST_WORKER_ADDRESS + workers - 1
                if address > 254:
                    raise pod_plan.UnsupportedPodError(
                        f"spec.replicatedJobs: {workers} worker pods; the local backend gives "
                        "each a loopback address 127.0.0.2-254, so at most 253"
                    )
                addresses[pod.name] = f"127.0.0.{address}"
    return addresses


def map_hosts(text: str, addresses: Mapping[str, str]) -> str:
    """Pod host names (``<pod>`` or ``<pod>.<subdomain>...``) in ``text`` -> their addresses."""
    for name in sorted(addresses, key=len, reverse=True):
        text = re.sub(
            rf"(?<![\w.-]){re.escape(name)}(\.[A-Za-z0-9.-]+)?(?![\w-])", addresses[name], text
        )
    return text


def _forwarded_env(env: Mapping[str, str], base_env: Mapping[str, str]) -> list[str]:
    """What the launcher passes on to every rank: LOCAL_ENV, then the pod's own env."""
    names = [name for name in LOCAL_ENV if name in base_env or name in env]
    names += [
        name
        for name in env
        if name not in NOT_FORWARDED
        and name not in names
        and not name.startswith(MPI_ENV_PREFIXES)
        and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name)
    ]
    return names


def localize_mpi_pods(
    plan: PodPlan,
    jobset: Mapping[str, Any],
    objects: Sequence[Mapping[str, Any]],
    *,
    volumes_root: Path,
    pod_dir: Callable[[str], Path],
    step_log: Callable[[str], Path],
    home: Path,
    rank_bin: Path,
    ssh_port: int,
    master_port: int,
    base_env: Mapping[str, str],
) -> PodPlan:
    """``plan`` with the MPI launcher and workers made to run here (unchanged if not MPI)."""
    volume = _ssh_volume(jobset, objects)
    if volume is None:
        return plan
    ssh_dir = volumes_root / volume
    addresses = host_addresses(plan)
    home_mount = {constants.DEFAULT_MPI_USER_HOME: str(home)}
    localized: PodPlan = []
    for job, pods in plan:
        where = f"replicatedJob {job['name']!r} command"
        changed = []
        for pod in pods:
            command = [pod_plan._map_paths(part, home_mount) for part in pod.command]
            env = {name: pod_plan._map_paths(value, home_mount) for name, value in pod.env.items()}
            if job["name"] == constants.LAUNCHER:
                path = env.get("PATH", base_env.get("PATH", ""))
                env = {
                    **env,
                    "MASTER_PORT": str(master_port),
                    "PATH": f"{rank_bin}:{path}" if path else str(rank_bin),
                    # bash sources ~/.bashrc when it thinks sshd started it (SSH_CLIENT set, no
                    # SHLVL): one that activates another Python (pyenv, conda) would take
                    # ``python`` away from the ranks on worker hosts.
                    "SHLVL": "1",
                    RANK_LOG_ENV: str(step_log(pod.step)),
                }
                local_options = [
                    "--loopback",
                    "--rank-env",
                    "--ssh-port",
                    str(ssh_port),
                    "--ssh-dir",
                    str(ssh_dir),
                    "--termination-log",
                    str(pod_dir(pod.name) / pod_plan.TERMINATION_LOG),
                ]
                for name in _forwarded_env(env, base_env):
                    local_options += ["-x", name]
                try:
                    command, option_env = mpi_runtime.to_mpi_launch(
                        command, where, [*local_options], wait_timeout=WAIT_TIMEOUT_SECONDS
                    )
                except mpi_runtime.InvalidArgumentError as error:
                    raise pod_plan.UnsupportedPodError(str(error)) from None
                env.update(option_env)
            elif job["name"] == constants.NODE:
                command = [
                    "mpi-worker",
                    "--ssh-dir",
                    str(ssh_dir),
                    "--port",
                    str(ssh_port),
                    "--listen",
                    addresses[pod.name],
                    "--state-dir",
                    str(pod_dir(pod.name) / "sshd"),
                ]
            changed.append(
                replace(
                    pod,
                    command=tuple(command),
                    env=env,
                    directories=(*pod.directories, str(home)),
                )
            )
        localized.append((job, changed))
    return localized


def check_mpi_pods(
    plan: PodPlan, jobset: Mapping[str, Any], objects: Sequence[Mapping[str, Any]]
) -> None:
    """Raise ``UnsupportedPodError`` when an MPI JobSet cannot run here (checked at submit)."""
    localize_mpi_pods(
        plan,
        jobset,
        objects,
        volumes_root=Path("volumes"),
        pod_dir=Path,
        step_log=Path,
        home=Path("home"),
        rank_bin=Path("mpi-bin"),
        ssh_port=pod_plan.DEFAULT_MASTER_PORT,
        master_port=pod_plan.DEFAULT_MASTER_PORT,
        base_env={},
    )


def _item_files(
    source: Mapping[str, Any], data: Mapping[str, str]
) -> list[tuple[str, str, int | None]]:
    items = source.get("items") or [{"key": key, "path": key} for key in sorted(data)]
    return [(item["path"], data[item["key"]], item.get("mode")) for item in items]


def _object_data(obj: Mapping[str, Any]) -> dict[str, str]:
    """A ConfigMap's ``data``; a Secret's ``data`` (base64) decoded, then its ``stringData``."""
    data = dict(obj.get("data") or {})
    if obj.get("kind") == "Secret":
        data = {key: base64.b64decode(value).decode() for key, value in data.items()}
    return {**data, **(obj.get("stringData") or {})}


def write_config_volumes(
    jobset: Mapping[str, Any],
    objects: Sequence[Mapping[str, Any]],
    volumes_root: Path,
    rewrite: Callable[[str], str] = lambda text: text,
) -> list[Path]:
    """Write every Secret and ConfigMap volume of the JobSet's pods whose object is in
    ``objects`` into ``volumes_root/<volume>`` with the volume's modes; ConfigMap text passes
    through ``rewrite``. Returns the files written."""
    by_name = {(obj.get("kind"), obj["metadata"]["name"]): obj for obj in objects}
    written: list[Path] = []
    for job in jobset.get("spec", {}).get("replicatedJobs") or []:
        for volume in _pod_spec(job).get("volumes") or []:
            for kind, key in (("Secret", "secretName"), ("ConfigMap", "name")):
                source = volume.get(kind[0].lower() + kind[1:])
                obj = by_name.get((kind, (source or {}).get(key)))
                if source is None or obj is None:
                    continue
                directory = volumes_root / volume["name"]
                directory.mkdir(parents=True, exist_ok=True)
                for path, text, mode in _item_files(source, _object_data(obj)):
                    target = directory / path
                    if target in written:
                        continue
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_text(rewrite(text) if kind == "ConfigMap" else text)
                    target.chmod(mode or source.get("defaultMode") or DEFAULT_FILE_MODE)
                    written.append(target)
    return written


def write_rank_shims(directory: Path, python: str) -> None:
    """``python`` and ``python3`` for MPI ranks: Python programs through ``python -m mpi4py``."""
    directory.mkdir(parents=True, exist_ok=True)
    for name in ("python", "python3"):
        path = directory / name
        path.write_text(_RANK_PYTHON.format(python=python, line_buffered=LINE_BUFFERED_MPI4PY))
        path.chmod(0o755)


def free_ssh_port() -> int:
    """A TCP port nobody listens on, on any address, right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("0.0.0.0", 0))
        return int(probe.getsockname()[1])


def prepare_mpi_pods(
    plan: PodPlan,
    jobset: Mapping[str, Any],
    objects: Sequence[Mapping[str, Any]],
    job_path: Path,
    pod_dir: Callable[[str], Path],
    master_port: int,
    base_env: Mapping[str, str],
) -> PodPlan:
    """The driver: write the Secret and hostfile volumes and the ranks' ``python``, return the
    localized plan."""
    if not is_mpi_jobset(jobset, objects):
        return plan
    python = shutil.which("python", path=base_env.get("PATH")) or sys.executable
    write_rank_shims(job_path / "mpi-bin", python)
    volumes_root = job_path / "volumes"
    addresses = host_addresses(plan)
    write_config_volumes(jobset, objects, volumes_root, lambda text: map_hosts(text, addresses))
    return localize_mpi_pods(
        plan,
        jobset,
        objects,
        volumes_root=volumes_root,
        pod_dir=pod_dir,
        step_log=JobDir(job_path.parent, job_path.name).log,
        home=job_path / "home",
        rank_bin=job_path / "mpi-bin",
        ssh_port=free_ssh_port(),
        master_port=master_port,
        base_env=base_env,
    )
