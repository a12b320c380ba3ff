"""The local plan: a JobSet compiled once, at submit, into what the job's supervisor executes.

``compiler.compile_plan`` builds it from the defaulted JobSet and the other objects of the
runtime framework's Plan; the backend writes it to ``<job>/plan.json`` (``to_document``) and the
supervisor reads it back (``from_document``) and runs it. It holds the replicated jobs in start
order with their pods (command, env, working directory, mounts, host name and address, device
and count) and every decision made at submit: private namespaces or not, accelerators run on
CPU, an MPI JobSet's hostfile, keys and addresses, the data cache's command, restarts, success
policy, grace period, deadline and packages. The supervisor expands, probes and decides nothing.

A few values exist only once the job runs (``LateValue``): the rendezvous and SSH ports the
supervisor picks, the local data cache's endpoint once it serves, the attempt number and the
``PATH`` the job inherits. A pod's compiled command and env hold the cluster's value wherever the
runtime framework put one (``29500``, the cache Service's address, attempt ``0``), and the pod's
``Slot``s say which env entry or argument, and which characters of it, receive which value:
``bind`` puts the run's values there. Nothing is found by searching strings at run time, so a
user's ``--max-steps 29500`` or a cache address in a user's argument stays as written.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from trainer_sdk import constants
from trainer_sdk.backends.local.packages import PackagePlan
from trainer_sdk.backends.local.volumes import Mount

__all__ = [
    "LOOPBACK",
    "DataCache",
    "Dependency",
    "LateValue",
    "LocalPlan",
    "LocalPod",
    "MpiSetup",
    "ReplicatedJob",
    "Slot",
    "Text",
    "VolumeFile",
    "bind",
    "from_document",
    "texts",
    "to_document",
    "with_texts",
]

LOOPBACK: Final = "127.0.0.1"


class LateValue(str, enum.Enum):
    """A value that exists only once the job runs."""

    MASTER_PORT = "masterPort"
    """The rendezvous port the supervisor chose for this run (29500 in a cluster)."""
    SSH_PORT = "sshPort"
    """The port of an MPI job's sshd workers, chosen by the supervisor."""
    CACHE_ENDPOINT = "cacheEndpoint"
    """The local data cache's endpoint, once it serves (the cache Service's in a cluster)."""
    RESTART_ATTEMPT = "restartAttempt"
    """The JobSet attempt a pod belongs to (its ``restart-attempt`` label)."""
    JOB_PATH = "jobPath"
    """The ``PATH`` every process of the job inherits: the interpreter shims first."""


@dataclass(frozen=True)
class Slot:
    """Where one late value goes: characters ``start:end`` of env entry ``env``, or of argument
    ``argument`` of the command, as compiled."""

    value: LateValue
    start: int
    end: int
    env: str | None = None
    argument: int | None = None

    def __post_init__(self) -> None:
        if (self.env is None) == (self.argument is None):
            raise ValueError(f"a slot names an env entry or an argument, not both: {self}")


@dataclass(frozen=True)
class Text:
    """A string being compiled, with the ``(start, end, value)`` spans that late values fill."""

    text: str
    spans: tuple[tuple[int, int, LateValue], ...] = ()

    @classmethod
    def late(cls, value: LateValue, compiled: str) -> Text:
        """All of ``compiled`` (the cluster's value) to be replaced by ``value``."""
        return cls(compiled, ((0, len(compiled), value),))

    def __add__(self, other: Text) -> Text:
        shift = len(self.text)
        moved = tuple((start + shift, end + shift, value) for start, end, value in other.spans)
        return Text(self.text + other.text, self.spans + moved)

    def map_literals(self, edit: Callable[[str], Text]) -> Text:
        """``edit`` applied to each stretch of characters outside the spans, the spans kept."""
        result, position = Text(""), 0
        for start, end, value in sorted(self.spans):
            result += edit(self.text[position:start]) + Text.late(value, self.text[start:end])
            position = end
        return result + edit(self.text[position:])


@dataclass(frozen=True)
class LocalPod:
    """One pod: one process. Its ``name`` is also its host name, at ``address``."""

    replicated_job: str
    job_index: int
    pod_index: int
    name: str
    step: str
    container: str
    command: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    image: str | None = None
    working_dir: str | None = None
    device: str = constants.UNKNOWN
    device_count: str = constants.UNKNOWN
    directories: tuple[str, ...] = ()
    mounts: tuple[Mount, ...] = ()  # bound at their paths when the plan is ``isolated``
    address: str = LOOPBACK  # in the job's hosts file
    slots: tuple[Slot, ...] = ()


def texts(pod: LocalPod) -> tuple[list[Text], dict[str, Text]]:
    """The pod's command and env with their late spans, to compile further."""
    command = [Text(argument) for argument in pod.command]
    env = {name: Text(value) for name, value in pod.env.items()}
    for slot in pod.slots:
        span = ((slot.start, slot.end, slot.value),)
        if slot.env is not None:
            env[slot.env] = Text(env[slot.env].text, env[slot.env].spans + span)
        elif slot.argument is not None:
            command[slot.argument] = Text(
                command[slot.argument].text, command[slot.argument].spans + span
            )
    return command, env


def with_texts(pod: LocalPod, command: Sequence[Text], env: Mapping[str, Text]) -> LocalPod:
    """``pod`` with this command and env, their spans as its slots."""
    slots = [
        Slot(value, start, end, argument=index)
        for index, argument in enumerate(command)
        for start, end, value in argument.spans
    ]
    slots += [
        Slot(value, start, end, env=name)
        for name, text in env.items()
        for start, end, value in text.spans
    ]
    return replace(
        pod,
        command=tuple(argument.text for argument in command),
        env={name: text.text for name, text in env.items()},
        slots=tuple(slots),
    )


def bind(pod: LocalPod, values: Mapping[LateValue, str]) -> LocalPod:
    """``pod`` with each slot holding its value from ``values`` (KeyError: one not given)."""
    command, env = list(pod.command), dict(pod.env)
    for slot in sorted(pod.slots, key=lambda slot: slot.start, reverse=True):  # offsets hold
        value = values[slot.value]
        if slot.env is not None:
            text = env[slot.env]
            env[slot.env] = text[: slot.start] + value + text[slot.end :]
        elif slot.argument is not None:
            text = command[slot.argument]
            command[slot.argument] = text[: slot.start] + value + text[slot.end :]
    return replace(pod, command=tuple(command), env=env, slots=())


@dataclass(frozen=True)
class Dependency:
    """A ``dependsOn`` entry: the replicated job ``name`` must have reached ``status``."""

    name: str
    status: str  # Complete or Ready


@dataclass(frozen=True)
class ReplicatedJob:
    """A replicated job's pods, and what it waits for."""

    name: str
    pods: tuple[LocalPod, ...]
    depends_on: tuple[Dependency, ...] = ()


@dataclass(frozen=True)
class VolumeFile:
    """A file of a Secret or ConfigMap volume, as the kubelet would write it."""

    path: str
    text: str
    mode: int


@dataclass(frozen=True)
class MpiSetup:
    """What an MPI JobSet needs on disk before its pods start."""

    rank_bin: str  # where the ranks' ``python`` goes (``mpi.write_rank_shims``)
    files: tuple[VolumeFile, ...]  # the SSH keys, and the hostfile naming loopback addresses


@dataclass(frozen=True)
class DataCache:
    """The job's data cache, run as one process: ``python -m trainer_data_cache ARGS``."""

    args: tuple[str, ...]
    env: dict[str, str]  # its tokens, from the Plan's Secret


@dataclass(frozen=True)
class LocalPlan:
    """Everything the supervisor runs, decided at submit."""

    jobs: tuple[ReplicatedJob, ...]  # in start order
    isolated: bool  # pods run in private namespaces (``isolation``)
    subdomain: str  # the pods' DNS subdomain and namespace: the job's hosts file
    namespace: str
    grace_seconds: float  # between SIGTERM and SIGKILL
    max_restarts: int = 0
    success_operator: str = "All"  # or Any, of the targets
    success_targets: tuple[str, ...] = ()  # replicated jobs (none: all of them)
    active_deadline_seconds: float | None = None
    accelerator_shortfall: tuple[str, ...] = ()  # why pods run on CPU (none: as requested)
    mpi: MpiSetup | None = None
    cache: DataCache | None = None
    packages: PackagePlan = field(default_factory=PackagePlan)
    pip_index_urls: tuple[str, ...] = ()

    def pods(self) -> Iterator[LocalPod]:
        """Every pod, in start order."""
        for job in self.jobs:
            yield from job.pods


# -- the JSON form ----------------------------------------------------------------------------
def to_document(plan: LocalPlan) -> dict[str, Any]:
    """``plan`` as ``plan.json`` holds it."""
    return {
        "jobs": [
            {
                "name": job.name,
                "dependsOn": [vars(dependency) for dependency in job.depends_on],
                "pods": [_pod_document(pod) for pod in job.pods],
            }
            for job in plan.jobs
        ],
        "isolated": plan.isolated,
        "subdomain": plan.subdomain,
        "namespace": plan.namespace,
        "graceSeconds": plan.grace_seconds,
        "maxRestarts": plan.max_restarts,
        "successOperator": plan.success_operator,
        "successTargets": list(plan.success_targets),
        "activeDeadlineSeconds": plan.active_deadline_seconds,
        "acceleratorShortfall": list(plan.accelerator_shortfall),
        "mpi": None
        if plan.mpi is None
        else {"rankBin": plan.mpi.rank_bin, "files": [vars(file) for file in plan.mpi.files]},
        "cache": None
        if plan.cache is None
        else {"args": list(plan.cache.args), "env": plan.cache.env},
        "packages": plan.packages.to_document(),
        "pipIndexUrls": list(plan.pip_index_urls),
    }


def _pod_document(pod: LocalPod) -> dict[str, Any]:
    return {
        "replicatedJob": pod.replicated_job,
        "jobIndex": pod.job_index,
        "podIndex": pod.pod_index,
        "name": pod.name,
        "step": pod.step,
        "container": pod.container,
        "command": list(pod.command),
        "env": pod.env,
        "image": pod.image,
        "workingDir": pod.working_dir,
        "device": pod.device,
        "deviceCount": pod.device_count,
        "directories": list(pod.directories),
        "mounts": [
            {
                "path": m.path,
                "local": m.local,
                "create": m.create,
                "readOnly": m.read_only,
                "subPath": m.sub_path,
            }
            for m in pod.mounts
        ],
        "address": pod.address,
        "slots": [
            {key: value for key, value in vars(slot).items() if value is not None}
            for slot in pod.slots
        ],
    }


def from_document(document: Mapping[str, Any]) -> LocalPlan:
    """The plan ``to_document`` wrote."""
    mpi, cache = document["mpi"], document["cache"]
    return LocalPlan(
        jobs=tuple(
            ReplicatedJob(
                name=job["name"],
                pods=tuple(_pod(pod) for pod in job["pods"]),
                depends_on=tuple(Dependency(**dependency) for dependency in job["dependsOn"]),
            )
            for job in document["jobs"]
        ),
        isolated=document["isolated"],
        subdomain=document["subdomain"],
        namespace=document["namespace"],
        grace_seconds=document["graceSeconds"],
        max_restarts=document["maxRestarts"],
        success_operator=document["successOperator"],
        success_targets=tuple(document["successTargets"]),
        active_deadline_seconds=document["activeDeadlineSeconds"],
        accelerator_shortfall=tuple(document["acceleratorShortfall"]),
        mpi=None
        if mpi is None
        else MpiSetup(mpi["rankBin"], tuple(VolumeFile(**file) for file in mpi["files"])),
        cache=None if cache is None else DataCache(tuple(cache["args"]), dict(cache["env"])),
        packages=PackagePlan.from_document(document["packages"]),
        pip_index_urls=tuple(document["pipIndexUrls"]),
    )


def _pod(document: Mapping[str, Any]) -> LocalPod:
    return LocalPod(
        replicated_job=document["replicatedJob"],
        job_index=document["jobIndex"],
        pod_index=document["podIndex"],
        name=document["name"],
        step=document["step"],
        container=document["container"],
        command=tuple(document["command"]),
        env=dict(document["env"]),
        image=document["image"],
        working_dir=document["workingDir"],
        device=document["device"],
        device_count=document["deviceCount"],
        directories=tuple(document["directories"]),
        mounts=tuple(
            Mount(
                mount["path"],
                mount["local"],
                mount["create"],
                mount["readOnly"],
                mount.get("subPath", ""),  # plans before subPaths were opened inside volumes
            )
            for mount in document["mounts"]
        ),
        address=document["address"],
        slots=tuple(
            Slot(**{**slot, "value": LateValue(slot["value"])}) for slot in document["slots"]
        ),
    )
