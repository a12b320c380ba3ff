"""A JobSet manifest expanded into the pods the local backend runs as processes (pure).

Replicated jobs are ordered by ``dependsOn`` (then the manifest's order, which is also the
``startupPolicy: InOrder`` order); each Job has ``parallelism`` pods with completion indexes.
Pods in private namespaces (``isolation``) keep their host names
``<jobset>-<rjob>-<jobIndex>-<podIndex>.<subdomain>`` and mount paths; without them (the
fallback) those names map to loopback and mount paths to local directories in commands and env.
The rendezvous port 29500 is the job's own port, which the supervisor chooses, so that jobs run
side by side: each place the runtime framework puts it, the variables that carry it
(``PORT_ENV``) and after a pod host name (``host:29500``), is a slot of the pod
(``plan.LateValue.MASTER_PORT``), and so is the attempt number (the restart-attempt label a
``fieldRef`` names, and ``TRAINER_RESTART_ATTEMPT``); nothing else is (a ``--max-steps 29500``
argument is the user's).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Final

from trainer_sdk import constants
from trainer_sdk.backends.local import volumes
from trainer_sdk.backends.local.plan import LOOPBACK, LateValue, LocalPod, Text, with_texts
from trainer_sdk.checkpoint.status import ATTEMPT_ENV
from trainer_sdk.status.runtimes import claim_templates, container_devices

__all__ = [
    "DEFAULT_MASTER_PORT",
    "TERMINATION_GRACE_SECONDS",
    "TERMINATION_LOG",
    "PodAddresses",
    "PodPlan",
    "UnsupportedPodError",
    "expand_pods",
    "failure_budget",
    "map_paths",
    "ordered_replicated_jobs",
    "step_name",
    "success_targets",
    "termination_grace",
]

DEFAULT_MASTER_PORT = 29500
TERMINATION_GRACE_SECONDS: Final = 5.0
"""Between SIGTERM and SIGKILL, where no pod template sets ``terminationGracePeriodSeconds``."""
# Where a pod may leave why it failed, in its pod directory (Kubernetes' terminationMessagePath);
# the runner adds it to the pod's failure message.
TERMINATION_LOG = "termination-log"
# Variables the runtime framework sets to the rendezvous port (torch, DeepSpeed over MPI,
# XGBoost's tracker): the only places a bare 29500 is the job's port.
PORT_ENV = frozenset({"PET_MASTER_PORT", "MASTER_PORT", "DMLC_TRACKER_PORT"})
# Containers the local backend runs with trainer_sdk.initializers when they have no command.
INITIALIZER_TARGETS = {
    constants.DATASET_INITIALIZER: ("dataset", constants.DATASET_PATH),
    constants.MODEL_INITIALIZER: ("model", constants.MODEL_PATH),
}

_ATTEMPT_FIELD = f"metadata.labels['{constants.JOBSET_RESTART_ATTEMPT_LABEL}']"

# Replicated jobs in start order, each with its pods (what ``expand_pods`` returns).
PodPlan = list[tuple[dict[str, Any], list[LocalPod]]]


class UnsupportedPodError(ValueError):
    """A pod that cannot run as a local process; the message names the field."""


@dataclass(frozen=True)
class PodAddresses:
    """How names and paths of the cluster map onto this machine."""

    hosts: tuple[str, ...] = ()
    volumes_root: str = ""
    root: Path = Path()  # the backend's job root: where persistent volume claims live
    claim_templates: tuple[str, ...] = ()  # the JobSet's volumeClaimPolicies: every pod's volumes
    # Pods in private namespaces (``isolation``): host names resolve and mount paths exist, so
    # only the port after a pod host name is the job's.
    isolated: bool = False

    def rewrite(self, text: str) -> Text:
        """``text`` with port 29500 where it follows a pod host name (``host:29500``) the job's
        port, and, unless ``isolated``, pod host names loopback; nothing else (a
        ``--max-steps 29500`` stays as written)."""
        result, position = Text(""), 0
        for match in self._host_pattern.finditer(text):
            if match.group("host") not in self._host_set:
                continue
            host = match.group("host") + (match.group("domain") or "")
            result += Text(text[position : match.start()] + (host if self.isolated else LOOPBACK))
            if match.group("port"):
                result += Text(":") + Text.late(LateValue.MASTER_PORT, str(DEFAULT_MASTER_PORT))
            position = match.end()
        return result + Text(text[position:])

    def rewrite_env(self, name: str, value: str) -> Text:
        """``rewrite``, and all of a variable that carries the rendezvous port the job's port."""
        if name in PORT_ENV and value == str(DEFAULT_MASTER_PORT):
            return Text.late(LateValue.MASTER_PORT, value)
        return self.rewrite(value)

    @cached_property
    def _host_pattern(self) -> re.Pattern[str]:
        """One pattern for every ``<prefix>-<job index>-<pod index>`` host name (then looked up),
        so that rewriting costs the same whatever the number of pods."""
        prefixes = sorted({host.rsplit("-", 2)[0] for host in self.hosts}, key=len, reverse=True)
        if not prefixes:
            return re.compile(r"(?!)")  # matches nothing
        names = "|".join(map(re.escape, prefixes))
        return re.compile(
            rf"\b(?P<host>(?:{names})-[0-9]+-[0-9]+)(?P<domain>\.[A-Za-z0-9.-]+)?\b"
            rf"(?P<port>:{DEFAULT_MASTER_PORT}(?![0-9]))?"
        )

    @cached_property
    def _host_set(self) -> frozenset[str]:
        return frozenset(self.hosts)


def ordered_replicated_jobs(jobset: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Replicated jobs in start order: every job after those it depends on, else manifest order."""
    jobs = list(jobset.get("spec", {}).get("replicatedJobs") or [])
    by_name = {job["name"]: job for job in jobs}
    ordered: list[dict[str, Any]] = []
    visiting: set[str] = set()

    def visit(job: dict[str, Any], path: str) -> None:
        if job in ordered:
            return
        if job["name"] in visiting:
            raise UnsupportedPodError(f"{path}.dependsOn: cycle through {job['name']!r}")
        visiting.add(job["name"])
        for index, dependency in enumerate(job.get("dependsOn") or []):
            if dependency.get("name") not in by_name:
                raise UnsupportedPodError(
                    f"{path}.dependsOn[{index}].name: no replicated job {dependency.get('name')!r}"
                )
            visit(
                by_name[dependency["name"]],
                f"spec.replicatedJobs[{jobs.index(by_name[dependency['name']])}]",
            )
        visiting.discard(job["name"])
        ordered.append(job)

    for position, job in enumerate(jobs):
        visit(job, f"spec.replicatedJobs[{position}]")
    return ordered


def step_name(
    replicated_job: str, job_index: int, pod_index: int, pods_per_job: int, node_offset: int
) -> str:
    """The SDK's step name: ``node-<rank>`` for trainer nodes, else the replicated job's name."""
    if replicated_job == constants.NODE:
        return f"{constants.NODE}-{node_offset + job_index * pods_per_job + pod_index}"
    if replicated_job == constants.LAUNCHER:
        return f"{constants.NODE}-0"
    suffix = f"-{job_index}" if job_index else ""
    return (
        f"{replicated_job}{suffix}"
        if pods_per_job == 1
        else f"{replicated_job}{suffix}-{pod_index}"
    )


def _field_value(path: str, pod_meta: Mapping[str, Any], where: str) -> str:
    labels, annotations = pod_meta["labels"], pod_meta["annotations"]
    match = re.fullmatch(r"metadata\.(labels|annotations)\['([^']+)'\]", path)
    if match:
        source = labels if match.group(1) == "labels" else annotations
        if match.group(2) not in source:
            raise UnsupportedPodError(
                f"{where}: the pod has no {match.group(1)[:-1]} {match.group(2)!r}"
            )
        return str(source[match.group(2)])
    simple: dict[str, str] = {
        "metadata.name": str(pod_meta["name"]),
        "metadata.namespace": str(pod_meta["namespace"]),
        "metadata.uid": str(pod_meta["name"]),
        "spec.nodeName": "localhost",
        "spec.serviceAccountName": "default",
        "status.podIP": LOOPBACK,
        "status.hostIP": LOOPBACK,
    }
    if path not in simple:
        raise UnsupportedPodError(
            f"{where}: fieldPath {path!r} is not available to a local process"
        )
    return simple[path]


def _resolve_env(
    container: Mapping[str, Any], pod_meta: Mapping[str, Any], where: str, addresses: PodAddresses
) -> dict[str, Text]:
    env: dict[str, Text] = {}
    for index, variable in enumerate(container.get("env") or []):
        name, path = variable["name"], f"{where}.env[{index}]"
        if "value" in variable:
            value = addresses.rewrite_env(name, str(variable["value"]))
            env[name] = value.map_literals(lambda literal: _expand_references(literal, env))
        elif field_ref := (variable.get("valueFrom") or {}).get("fieldRef"):
            field_path = field_ref["fieldPath"]
            given = _field_value(field_path, pod_meta, f"{path}.valueFrom.fieldRef.fieldPath")
            attempt = field_path == _ATTEMPT_FIELD  # the label JobSet sets per attempt
            env[name] = Text.late(LateValue.RESTART_ATTEMPT, given) if attempt else Text(given)
        elif variable.get("valueFrom"):
            raise UnsupportedPodError(f"{path}.valueFrom: only fieldRef is resolved locally")
        else:
            env[name] = Text("")
    if ATTEMPT_ENV in env:  # the attempt, whatever gave it its first value
        env[ATTEMPT_ENV] = Text.late(LateValue.RESTART_ATTEMPT, env[ATTEMPT_ENV].text)
    return env


def _expand_references(text: str, env: Mapping[str, Text]) -> Text:
    """``$(NAME)`` in ``text`` -> the value of ``NAME`` defined before (as it is, if none)."""
    result, position = Text(""), 0
    for match in re.finditer(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", text):
        result += Text(text[position : match.start()]) + env.get(match.group(1), Text(match[0]))
        position = match.end()
    return result + Text(text[position:])


def _pods_of(
    jobset_name: str,
    namespace: str,
    position: int,
    job: Mapping[str, Any],
    addresses: PodAddresses,
    node_offset: int,
) -> list[LocalPod]:
    where = f"spec.replicatedJobs[{position}]"
    job_spec = job.get("template", {}).get("spec", {})
    pod_template = job_spec.get("template", {})
    pod_spec = pod_template.get("spec", {})
    containers = pod_spec.get("containers") or []
    if len(containers) != 1:
        raise UnsupportedPodError(
            f"{where}.template.spec.template.spec.containers: a local pod runs one container, "
            f"got {len(containers)}"
        )
    container = containers[0]
    container_where = f"{where}.template.spec.template.spec.containers[0]"
    parallelism = int(job_spec.get("parallelism", job_spec.get("completions", 1)) or 1)
    replicas = int(job.get("replicas", 1))
    pods = []
    for job_index in range(replicas):
        for pod_index in range(parallelism):
            pod_name = f"{jobset_name}-{job['name']}-{job_index}-{pod_index}"
            labels = dict(pod_template.get("metadata", {}).get("labels") or {})
            labels.update(
                {
                    constants.JOBSET_NAME_LABEL: jobset_name,
                    constants.JOBSET_RJOB_NAME_LABEL: job["name"],
                    constants.JOBSET_JOB_INDEX_LABEL: str(job_index),
                    constants.JOB_INDEX_LABEL: str(pod_index),
                    # Each attempt's processes get their own (LateValue.RESTART_ATTEMPT).
                    constants.JOBSET_RESTART_ATTEMPT_LABEL: "0",
                }
            )
            annotations = dict(pod_template.get("metadata", {}).get("annotations") or {})
            annotations.update(
                {
                    constants.JOBSET_JOB_INDEX_LABEL: str(job_index),
                    constants.JOB_INDEX_LABEL: str(pod_index),
                }
            )
            meta = {
                "name": pod_name,
                "namespace": namespace,
                "labels": labels,
                "annotations": annotations,
            }
            command = [*(container.get("command") or []), *(container.get("args") or [])]
            if not command and container.get("name") in INITIALIZER_TARGETS:
                kind, target = INITIALIZER_TARGETS[container["name"]]
                command = ["python", "-m", "trainer_sdk.initializers", kind, target]
            if not command:
                raise UnsupportedPodError(
                    f"{container_where}.command: the image's entrypoint cannot run locally; "
                    "set a command"
                )
            placed = _local_mounts(container, pod_spec, container_where, addresses, namespace)
            mounts = {} if addresses.isolated else {mount.path: mount.source for mount in placed}
            env = {
                name: map_paths(value, mounts)
                for name, value in _resolve_env(container, meta, container_where, addresses).items()
            }
            env.setdefault("HOSTNAME", Text(pod_name))
            device, count = container_devices(container.get("resources")) or (
                constants.UNKNOWN,
                constants.UNKNOWN,
            )
            processes = env.get(constants.TORCH_ENV_NUM_PROC_PER_NODE, Text("")).text
            if processes.isdigit():
                count = processes
            pod = LocalPod(
                replicated_job=job["name"],
                job_index=job_index,
                pod_index=pod_index,
                name=pod_name,
                step=step_name(job["name"], job_index, pod_index, parallelism, node_offset),
                container=container.get("name", job["name"]),
                command=(),
                image=container.get("image"),
                working_dir=container.get("workingDir"),
                device=device,
                device_count=count,
                directories=tuple(mount.local for mount in placed if mount.create),
                mounts=tuple(placed),
            )
            pods.append(
                with_texts(pod, [map_paths(addresses.rewrite(arg), mounts) for arg in command], env)
            )
    return pods


def _local_mounts(
    container: Mapping[str, Any],
    pod_spec: Mapping[str, Any],
    where: str,
    addresses: PodAddresses,
    namespace: str,
) -> list[volumes.Mount]:
    """The container's mounts placed on this machine (none without ``volumes_root``)."""
    if not addresses.volumes_root:
        return []
    try:
        return volumes.pod_mounts(
            container,
            pod_spec,
            where,
            job_volumes=addresses.volumes_root,
            root=addresses.root,
            namespace=namespace,
            claim_templates=addresses.claim_templates,
        )
    except volumes.InvalidVolumeError as error:
        raise UnsupportedPodError(str(error)) from None


def map_paths(text: Text, mounts: Mapping[str, str]) -> Text:
    """Mount paths (longest first) in ``text`` replaced by their local directories."""
    return text.map_literals(lambda literal: Text(_map_paths(literal, mounts)))


def _map_paths(text: str, mounts: Mapping[str, str]) -> str:
    for path in sorted(mounts, key=len, reverse=True):
        text = re.sub(rf"(?<![\w/.-]){re.escape(path)}(?=/|\b|$)", mounts[path], text)
    return text


def expand_pods(
    jobset: Mapping[str, Any],
    volumes_root: str = "",
    root: Path = Path(),
    isolated: bool = False,
) -> PodPlan:
    """Each replicated job, in start order, with its pods; with ``volumes_root`` (the job's
    volumes), volume mounts become local directories (``volumes.pod_mounts``: claims under
    ``root``): bound at their paths when ``isolated``, else their paths rewritten in commands
    and env, as are pod host names."""
    metadata = jobset.get("metadata") or {}
    name = metadata.get("name", "")
    namespace = metadata.get("namespace", "default")
    jobs = list(jobset.get("spec", {}).get("replicatedJobs") or [])
    hosts = tuple(
        sorted(
            {
                f"{name}-{job['name']}-{i}-{p}"
                for job in jobs
                for i in range(int(job.get("replicas", 1)))
                for p in range(
                    int(job.get("template", {}).get("spec", {}).get("parallelism", 1) or 1)
                )
            },
            key=len,
            reverse=True,
        )
    )
    addresses = PodAddresses(
        hosts=hosts,
        volumes_root=volumes_root,
        root=root,
        claim_templates=claim_templates(jobset.get("spec") or {}),
        isolated=isolated,
    )
    has_launcher = any(job["name"] == constants.LAUNCHER for job in jobs)
    expanded = []
    for job in ordered_replicated_jobs(jobset):
        offset = 1 if has_launcher and job["name"] == constants.NODE else 0
        expanded.append((job, _pods_of(name, namespace, jobs.index(job), job, addresses, offset)))
    return expanded


def failure_budget(jobset: Mapping[str, Any]) -> int:
    """``failurePolicy.maxRestarts`` (0 when unset)."""
    return int((jobset.get("spec", {}).get("failurePolicy") or {}).get("maxRestarts", 0) or 0)


def termination_grace(jobset: Mapping[str, Any], default: float) -> float:
    """How long a stopping pod has between SIGTERM and SIGKILL: the longest
    ``terminationGracePeriodSeconds`` of the JobSet's pod templates, ``default`` when none sets
    one (Kubernetes' own default, 30 s, would make every local stop of a stuck rank slow)."""
    periods = [
        spec.get("terminationGracePeriodSeconds")
        for job in jobset.get("spec", {}).get("replicatedJobs") or []
        for spec in [job.get("template", {}).get("spec", {}).get("template", {}).get("spec", {})]
    ]
    given = [float(p) for p in periods if isinstance(p, int | float) and not isinstance(p, bool)]
    return max((p for p in given if p >= 0), default=default)


def success_targets(jobset: Mapping[str, Any]) -> tuple[str, Sequence[str]]:
    """``successPolicy``: operator (All / Any) and target replicated jobs (all when empty)."""
    policy = jobset.get("spec", {}).get("successPolicy") or {}
    names = [job["name"] for job in jobset.get("spec", {}).get("replicatedJobs") or []]
    return policy.get("operator", "All"), list(policy.get("targetReplicatedJobs") or names)
