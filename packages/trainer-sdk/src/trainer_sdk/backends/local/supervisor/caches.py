"""The data cache of a TrainJob whose dataset initializer has a ``cache://`` URI, run locally.

In a cluster the controller's plan applies StatefulSets that run the cache, the JobSet's
dataset-initializer step waits until it is ready (``data-cache probe <Service address>``), and
the trainer reads the address of its Service from ``DATA_CACHE_ENDPOINT``. Locally the
supervisor runs the same cache as one ``data-cache serve`` process (``data_cache``: the
``serve_args`` of those StatefulSets, compiled at submit) for the life of the job and reads its
endpoint from the first line it prints (after loading). That endpoint is a late value of the
job's plan (``plan.LateValue.CACHE_ENDPOINT``): at submit ``with_endpoint_slots`` makes the two
places the runtime framework put the Service's address, the probe's argument and the trainer's
``DATA_CACHE_ENDPOINT``, slots that receive it; nothing else changes, so a user's argument that
names the Service stays as written. The tokens the plan's Secret holds go to the cache process
as env (``cache_tokens``) and to the pods as the literal values of their ``secretKeyRef`` env
(``with_secret_values``), so the local cache is no more open than the cluster's.
"""

from __future__ import annotations

import base64
import json
import queue
import subprocess
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import data_cache_manifests

from trainer_sdk import constants
from trainer_sdk.backends.local.plan import DataCache, LateValue, Text, texts, with_texts
from trainer_sdk.backends.local.submit.pods import PodPlan
from trainer_sdk.private_files import open_private

__all__ = [
    "CACHE_LOG_STEP",
    "CacheStartError",
    "data_cache",
    "start_cache",
    "with_endpoint_slots",
    "with_secret_values",
]

CACHE_LOG_STEP: Final = "data-cache"
"""The log the cache process writes (``logs/data-cache.log`` in the job's directory)."""
START_TIMEOUT_SECONDS: Final = 600.0
"""How long the cache may take to load its data and print its endpoint."""
_COMPONENT: Final = "app.kubernetes.io/component"
# The dataset initializer's command as the runtime framework's data-cache plugin sets it: the
# Service's address is the argument after these.
_PROBE: Final = ("data-cache", "probe")


class CacheStartError(RuntimeError):
    """The cache process exited, or printed no endpoint in time; the message says which."""


def _has_cache(objects: Sequence[Mapping[str, Any]]) -> bool:
    return any(
        obj.get("kind") == "StatefulSet"
        and ((obj.get("metadata") or {}).get("labels") or {}).get("app.kubernetes.io/name")
        == "data-cache"
        for obj in objects
    )


def data_cache(objects: Sequence[Mapping[str, Any]]) -> DataCache | None:
    """The cache the planned objects describe, as one ``trainer_data_cache`` process with its
    tokens, or None when the plan has no cache."""
    if not _has_cache(objects):
        return None
    return DataCache(tuple(data_cache_manifests.serve_args(objects)), _cache_tokens(objects))


def with_endpoint_slots(plan: PodPlan, jobset: Mapping[str, Any]) -> PodPlan:
    """``plan`` with the places the runtime framework put the cache Service's address (the
    dataset initializer's ``data-cache probe`` argument, ``DATA_CACHE_ENDPOINT``) slots of the
    local cache's endpoint."""
    metadata = jobset.get("metadata") or {}
    service = data_cache_manifests.cache_endpoint(
        metadata.get("name", ""), metadata.get("namespace") or "default"
    )
    endpoint = Text.late(LateValue.CACHE_ENDPOINT, service)
    changed: PodPlan = []
    for job, pods in plan:
        placed = []
        for pod in pods:
            command, env = texts(pod)
            probe = len(_PROBE)
            initializer = pod.replicated_job == constants.DATASET_INITIALIZER
            if initializer and pod.command[: probe + 1] == (*_PROBE, service):
                command[probe] = endpoint
            if pod.env.get(data_cache_manifests.ENDPOINT_ENV) == service:
                env[data_cache_manifests.ENDPOINT_ENV] = endpoint
            placed.append(with_texts(pod, command, env))
        changed.append((job, placed))
    return changed


def start_cache(
    command: Sequence[str],
    log: Path,
    env: Mapping[str, str],
    timeout: float = START_TIMEOUT_SECONDS,
) -> tuple[subprocess.Popen[bytes], str]:
    """Start the cache in a process group of its own; its endpoint once it has loaded.

    Its first line of output is the endpoint; the rest of its output, and its errors, go to
    ``log``. Raises CacheStartError (with the process ended) when it exits first or is slower
    than ``timeout`` seconds.
    """
    with open_private(log) as stream:
        process = subprocess.Popen(
            list(command),
            stdout=subprocess.PIPE,
            stderr=stream,
            stdin=subprocess.DEVNULL,
            env=dict(env),
            start_new_session=True,
        )
    first_line: queue.Queue[bytes] = queue.Queue(maxsize=1)
    threading.Thread(target=_pump, args=(process, first_line, log), daemon=True).start()
    try:
        line = first_line.get(timeout=timeout).decode().strip()
    except queue.Empty:
        process.kill()
        process.wait()
        raise CacheStartError(
            f"the data cache printed no endpoint within {timeout:g} s; see {log}"
        ) from None
    if not line.startswith("grpc"):
        process.wait()
        raise CacheStartError(
            f"the data cache exited with code {process.returncode} before serving; see {log}"
        )
    return process, line


def _pump(process: subprocess.Popen[bytes], first_line: queue.Queue[bytes], log: Path) -> None:
    """Hand the first line of output over, append the rest to the log."""
    assert process.stdout is not None
    first_line.put(process.stdout.readline())
    with open_private(log) as stream:
        for line in process.stdout:
            stream.write(line)
            stream.flush()


def _cache_tokens(objects: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """The env that gives the cache process its tokens: each ``secretKeyRef`` env entry of the
    cache head's container, resolved from the plan's Secret of that name."""
    env: dict[str, str] = {}
    for obj in objects:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        if obj.get("kind") == "StatefulSet" and labels.get(_COMPONENT) == "cache-head":
            (container,) = obj["spec"]["template"]["spec"]["containers"]
            env.update(_secret_values(container.get("env") or (), objects))
    return env


def with_secret_values(
    jobset: Mapping[str, Any], objects: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """A copy of ``jobset`` in which each pod env entry taken from a Secret of ``objects`` (the
    cache's token) is given as its value, as a kubelet would resolve it."""
    resolved: dict[str, Any] = json.loads(json.dumps(jobset))
    for replicated in (resolved.get("spec") or {}).get("replicatedJobs") or ():
        pod_spec = replicated["template"]["spec"]["template"]["spec"]
        for container in [*pod_spec.get("initContainers", ()), *pod_spec.get("containers", ())]:
            values = _secret_values(container.get("env") or (), objects)
            container["env"] = [
                {"name": var["name"], "value": values[var["name"]]}
                if var.get("name") in values
                else var
                for var in container.get("env") or ()
            ]
    return resolved


def _secret_values(
    env: Sequence[Mapping[str, Any]], objects: Sequence[Mapping[str, Any]]
) -> dict[str, str]:
    """Name -> value of the ``env`` entries whose ``secretKeyRef`` a Secret of ``objects``
    holds (``stringData``, or base64 ``data``)."""
    secrets = {
        (obj.get("metadata") or {}).get("name"): {
            **{
                key: base64.b64decode(value).decode()
                for key, value in (obj.get("data") or {}).items()
            },
            **(obj.get("stringData") or {}),
        }
        for obj in objects
        if obj.get("kind") == "Secret"
    }
    values = {}
    for var in env:
        ref = (var.get("valueFrom") or {}).get("secretKeyRef") or {}
        value = secrets.get(ref.get("name"), {}).get(ref.get("key"))
        if value is not None:
            values[var["name"]] = value
    return values
