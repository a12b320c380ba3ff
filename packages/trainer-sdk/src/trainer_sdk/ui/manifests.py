"""The raw objects behind a job, as each backend holds them: the TrainJob (with its status), the
JobSet it produced, and the runtime manifests. ``TrainerClient`` gives the SDK's view of a job;
the UI also shows the objects themselves."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final, cast

from trainer_sdk import constants
from trainer_sdk.backends.base import RuntimeBackend
from trainer_sdk.backends.local.backend import LocalBackend
from trainer_sdk.backends.local.jobdir import JobDir, read_json
from trainer_sdk.errors import JobNotFoundError

__all__ = [
    "finished_at",
    "jobset_manifest",
    "local_log",
    "local_pods",
    "runtime_manifests",
    "trainjob_manifest",
]

JOBSET_GROUP: Final = "jobset.x-k8s.io"
JOBSET_VERSION: Final = "v1alpha2"
JOBSET_PLURAL: Final = "jobsets"


def _local_dir(backend: LocalBackend, name: str) -> JobDir:
    try:
        job_dir = JobDir(backend.root, name)
    except ValueError:
        raise JobNotFoundError(name, str(backend.root)) from None
    if not job_dir.exists():
        raise JobNotFoundError(name, str(backend.root))
    return job_dir


def local_log(backend: RuntimeBackend, name: str, step: str) -> Path | None:
    """The file a local job's step writes its log to (None on other backends)."""
    return _local_dir(backend, name).log(step) if isinstance(backend, LocalBackend) else None


def local_pods(backend: LocalBackend, name: str) -> tuple[dict[str, int], Path | None]:
    """A local job's running pods (name: pid) and its cgroup, if it has one."""
    state = read_json(_local_dir(backend, name).state)
    pods = {
        str(pod["name"]): int(pod["pid"])
        for pod in state.get("pods") or []
        if pod.get("phase") == constants.POD_RUNNING and pod.get("pid")
    }
    return pods, Path(state["cgroup"]) if state.get("cgroup") else None


def trainjob_manifest(backend: RuntimeBackend, name: str) -> dict[str, Any]:
    """The TrainJob as stored, ``status`` included (locally: the status the supervisor wrote)."""
    if isinstance(backend, LocalBackend):
        job_dir = _local_dir(backend, name)
        manifest = dict(read_json(job_dir.trainjob))
        manifest["status"] = read_json(job_dir.state).get("trainjob") or {}
        return manifest
    from trainer_sdk.backends.kubernetes.backend import KubernetesBackend

    if isinstance(backend, KubernetesBackend):
        return backend._trainjob(name)
    raise NotImplementedError(f"backend: {type(backend).__name__} has no TrainJob manifests")


def jobset_manifest(backend: RuntimeBackend, name: str) -> dict[str, Any] | None:
    """The JobSet the TrainJob produced (same name), or None while there is none."""
    if isinstance(backend, LocalBackend):
        job_dir = _local_dir(backend, name)
        if not job_dir.jobset.is_file():
            return None
        manifest = dict(read_json(job_dir.jobset))
        manifest["status"] = read_json(job_dir.state).get("jobset") or {}
        return manifest
    from trainer_sdk.backends.kubernetes.backend import KubernetesBackend

    if isinstance(backend, KubernetesBackend):
        try:
            found = backend.custom.get_namespaced_custom_object(
                JOBSET_GROUP, JOBSET_VERSION, backend.namespace, JOBSET_PLURAL, name
            )
        except Exception as error:  # the kubernetes client raises ApiException
            if getattr(error, "status", None) == 404:
                return None
            raise
        return cast(dict[str, Any], found)
    raise NotImplementedError(f"backend: {type(backend).__name__} has no JobSet manifests")


def runtime_manifests(backend: RuntimeBackend) -> list[dict[str, Any]]:
    """Every runtime manifest jobs can use, by name."""
    manifests = backend._runtime_manifests()
    return [manifests[name] for name in sorted(manifests)]


def finished_at(manifest: dict[str, Any]) -> str | None:
    """When the TrainJob's Complete or Failed condition became true (ISO 8601), if it did."""
    for condition in (manifest.get("status") or {}).get("conditions") or []:
        if (
            condition.get("type")
            in (
                constants.TRAINJOB_COMPLETE,
                constants.TRAINJOB_FAILED,
            )
            and condition.get("status") == "True"
        ):
            return str(condition.get("lastTransitionTime") or "") or None
    return None
