"""MPI JobSets on this machine: the launcher and worker pods of ``mlPolicy.mpi`` as processes.

A JobSet is an MPI JobSet when its ``launcher`` mounts an SSH-auth Secret of the Plan. Then:

- the Plan's Secrets and ConfigMaps are written into the volume directories that mount them
  (``<job>/volumes/<volume>``), with the modes of the volume (the private key 0640, as
  upstream; ssh and sshd get a 0600 copy from ``mpi_runtime.private_identity``);
- every pod gets a loopback address: the launcher ``localhost`` (mpirun runs its ranks itself),
  the workers ``127.0.0.2``, ``127.0.0.3``, ... in pod order; the pod host names of the JobSet in
  the hostfile become those addresses, so rank ``r`` still runs on ``hosts[r // slots]``;
- a worker runs ``mpi-worker``: an sshd with the job's key on its address and the job's SSH port
  (one free port per run, which the supervisor picks: a slot of the pod,
  ``plan.LateValue.SSH_PORT``, so jobs run side by side);
- the launcher's ``mpirun [options] CMD`` (or ``mpi-launch [options] -- CMD``, or
  ``deepspeed --launcher openmpi|mpich|impi [options] SCRIPT``: the mpirun line DeepSpeed's
  runner would build, binding and mapping options dropped; ``mpi_runtime.to_mpi_launch``
  translates it) runs as
  ``mpi-launch [options] --loopback --rank-env --ssh-dir D ... --ssh-port P -- CMD``: it waits
  for the workers' sshd, pins MPI to ``lo`` (``btl self,tcp``), gives every rank RANK,
  WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT (the job's port), and forwards the pod's
  env (PATH with the interpreter shims, the TrainJob's env, and the job's env that
  ``LOCAL_ENV`` names) to ranks started over ssh;
- ranks that have not started within ``mpi-launch``'s start timeout (60 s; the TrainJob's env
  may set ``MPI_LAUNCH_START_TIMEOUT``) make it stop mpirun and fail, naming their hosts in the
  launcher pod's termination log, which the runner puts in the pod's failure message;
- ranks find ``python`` in ``<job>/mpi-bin`` first, where it runs Python programs through
  ``python -m mpi4py`` (as ``mpi-launch`` does for a Python command), so that a rank that raises
  aborts the job instead of leaving the others waiting in a collective; the SDK's script is a
  ``bash -c`` that ``mpi-launch`` cannot see into;
- the MPI user's home (``DEFAULT_MPI_USER_HOME``, where the SDK writes the training script) is
  ``<job>/home``, shared by the job's pods.

Other replicated jobs (initializers) run as they are. ``localize_mpi_pods`` is pure and runs at
submit (``compiler``); the supervisor does the I/O with ``write_volume_files``,
``write_rank_shims`` and ``free_ssh_port``.
"""

from __future__ import annotations

import base64
import re
import socket
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

import mpi_runtime

from trainer_sdk import constants
from trainer_sdk.backends.local.jobdir import JobDir
from trainer_sdk.backends.local.plan import (
    LateValue,
    MpiSetup,
    Text,
    VolumeFile,
    texts,
    with_texts,
)
from trainer_sdk.backends.local.submit import pods as pod_plan
from trainer_sdk.training.progress import STATUS_FILE_ENV

__all__ = [
    "LINE_BUFFERED_MPI4PY",
    "RANK_LOG_ENV",
    "config_volume_files",
    "free_ssh_port",
    "host_addresses",
    "localize_mpi_pods",
    "map_hosts",
    "write_rank_shims",
    "write_volume_files",
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


def host_addresses(plan: pod_plan.PodPlan) -> dict[str, str]:
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


def _forwarded_env(env: Collection[str], job_env: Collection[str]) -> list[str]:
    """What the launcher passes on to every rank: LOCAL_ENV, then the pod's own env."""
    names = [name for name in LOCAL_ENV if name in job_env or name in env]
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
    plan: pod_plan.PodPlan,
    jobset: Mapping[str, Any],
    objects: Sequence[Mapping[str, Any]],
    job_dir: JobDir,
    job_env: Collection[str],
) -> tuple[pod_plan.PodPlan, MpiSetup | None]:
    """``plan`` with the MPI launcher and workers made to run here, and the files they need
    (``plan`` and None if not MPI). ``job_env`` names the variables every process of the job
    inherits (those of ``LOCAL_ENV`` among them are forwarded to the ranks)."""
    volume = _ssh_volume(jobset, objects)
    if volume is None:
        return plan, None
    volumes_root = job_dir.path / "volumes"
    ssh_dir, home, rank_bin = volumes_root / volume, job_dir.path / "home", job_dir.path / "mpi-bin"
    addresses = host_addresses(plan)
    home_mount = {constants.DEFAULT_MPI_USER_HOME: str(home)}
    localized: pod_plan.PodPlan = []
    for job, pods in plan:
        changed = []
        for pod in pods:
            command, env = texts(pod)
            command = [pod_plan.map_paths(argument, home_mount) for argument in command]
            env = {name: pod_plan.map_paths(value, home_mount) for name, value in env.items()}
            address = pod.address
            if job["name"] == constants.LAUNCHER:
                env = _launcher_env(env, rank_bin, job_dir.log(pod.step))
                options = [
                    "--loopback",
                    "--rank-env",
                    "--ssh-dir",
                    str(ssh_dir),
                    "--termination-log",
                    str(job_dir.pod_dir(pod.name) / pod_plan.TERMINATION_LOG),
                    *(option for name in _forwarded_env(env, job_env) for option in ("-x", name)),
                ]
                where = f"replicatedJob {job['name']!r} command"
                command, option_env = _launch_command(command, options, where)
                env.update({name: Text(value) for name, value in option_env.items()})
            elif job["name"] == constants.NODE:
                address = addresses[pod.name]
                command = [
                    *map(Text, ("mpi-worker", "--ssh-dir", str(ssh_dir), "--port")),
                    Text.late(LateValue.SSH_PORT, str(mpi_runtime.SSH_PORT)),
                    *map(Text, ("--listen", address, "--state-dir")),
                    Text(str(job_dir.pod_dir(pod.name) / "sshd")),
                ]
            changed.append(
                replace(
                    with_texts(pod, command, env),
                    directories=(*pod.directories, str(home)),
                    address=address,
                )
            )
        localized.append((job, changed))
    files = config_volume_files(
        jobset, objects, volumes_root, lambda text: map_hosts(text, addresses)
    )
    return localized, MpiSetup(str(rank_bin), tuple(files))


def _launcher_env(env: Mapping[str, Text], rank_bin: Path, log: Path) -> dict[str, Text]:
    """The launcher's env: the job's port, the ranks' ``python`` first on the PATH it would get
    (its own, else the job's), and the log its Python ranks write to."""
    if "PATH" not in env:
        path = Text(f"{rank_bin}:") + Text.late(LateValue.JOB_PATH, "")
    elif env["PATH"].text:
        path = Text(f"{rank_bin}:") + env["PATH"]
    else:
        path = Text(str(rank_bin))
    return {
        **env,
        "MASTER_PORT": Text.late(LateValue.MASTER_PORT, str(pod_plan.DEFAULT_MASTER_PORT)),
        "PATH": path,
        # bash sources ~/.bashrc when it thinks sshd started it (SSH_CLIENT set, no SHLVL): one
        # that activates another Python (pyenv, conda) would take ``python`` away from the ranks
        # on worker hosts.
        "SHLVL": Text("1"),
        RANK_LOG_ENV: Text(str(log)),
    }


def _launch_command(
    command: Sequence[Text], options: Sequence[str], where: str
) -> tuple[list[Text], dict[str, str]]:
    """The launcher's ``command`` as ``mpi-launch`` runs it here (``mpi_runtime.to_mpi_launch``),
    with ``options`` and then the job's SSH port last before its ``--``; and the env its
    translated options set. The program after ``--`` is the command's own, verbatim: the job's
    port in it (``host:29500``) keeps its slot; anywhere else it cannot be translated."""
    local = [*options, "--ssh-port", str(mpi_runtime.SSH_PORT)]
    try:
        launch, env = mpi_runtime.to_mpi_launch(
            [argument.text for argument in command], where, local, wait_timeout=WAIT_TIMEOUT_SECONDS
        )
    except mpi_runtime.InvalidArgumentError as error:
        raise pod_plan.UnsupportedPodError(str(error)) from None
    separator = launch.index("--")  # to_mpi_launch's own: every option before it is one
    if launch[separator - len(local) : separator] != local:
        raise RuntimeError(f"mpi_runtime.to_mpi_launch did not end its options with {local}")
    result = [Text(argument) for argument in launch]
    result[separator - 1] = Text.late(LateValue.SSH_PORT, launch[separator - 1])
    for index, argument in enumerate(command):
        if not argument.spans:
            continue
        tail = [later.text for later in command[index:]]
        if launch[separator + 1 :][-len(tail) :] != tail:
            raise pod_plan.UnsupportedPodError(
                f"{where}[{index}]: {argument.text!r} names the job's rendezvous port in an "
                "mpirun option, which the local backend translates; give it after the program"
            )
        result[len(launch) - len(tail)] = argument
    return result, env


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


def config_volume_files(
    jobset: Mapping[str, Any],
    objects: Sequence[Mapping[str, Any]],
    volumes_root: Path,
    rewrite: Callable[[str], str] = lambda text: text,
) -> list[VolumeFile]:
    """Every file of the Secret and ConfigMap volumes of the JobSet's pods whose object is in
    ``objects``, under ``volumes_root/<volume>`` with the volume's modes; ConfigMap text passes
    through ``rewrite``."""
    by_name = {(obj.get("kind"), obj["metadata"]["name"]): obj for obj in objects}
    files: dict[Path, VolumeFile] = {}
    for job in jobset.get("spec", {}).get("replicatedJobs") or []:
        for volume in _pod_spec(job).get("volumes") or []:
            for kind, key in (("Secret", "secretName"), ("ConfigMap", "name")):
                source = volume.get(kind[0].lower() + kind[1:])
                obj = by_name.get((kind, (source or {}).get(key)))
                if source is None or obj is None:
                    continue
                for path, text, mode in _item_files(source, _object_data(obj)):
                    target = volumes_root / volume["name"] / path
                    files.setdefault(
                        target,
                        VolumeFile(
                            str(target),
                            rewrite(text) if kind == "ConfigMap" else text,
                            mode or source.get("defaultMode") or DEFAULT_FILE_MODE,
                        ),
                    )
    return list(files.values())


def write_volume_files(files: Sequence[VolumeFile]) -> None:
    """Write ``files`` (their directories created), each with its mode."""
    for file in files:
        target = Path(file.path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(file.text)
        target.chmod(file.mode)


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
