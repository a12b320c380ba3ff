"""Where a local pod's volumes live, and the named volumes that outlive jobs.

As in a cluster:

- a ``persistentVolumeClaim`` is one directory per claim per namespace,
  ``<root>/.volumes/<namespace>/<claimName>``, shared by every job naming that claim and kept when
  a job is deleted (``trainer volumes delete`` removes it);
- ``hostPath`` is the host's own path;
- every other volume (``emptyDir``, the Secret and ConfigMap volumes the backend writes, and the
  claims a JobSet makes for its pods from its ``volumeClaimPolicies`` templates) is a directory
  of the job, ``<job>/volumes/<volume name>``, deleted with it.

``<root>`` is the backend's job root (``LocalBackendConfig.root``); ``claim_path`` is the lookup
other modules use (the checkpoint API finds a claim's directory with it).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from trainer_sdk.backends.local.jobdir import JobDir, lock_held, read_json

__all__ = [
    "ClaimInUseError",
    "ClaimVolume",
    "InvalidVolumeError",
    "Mount",
    "claim_path",
    "claims_root",
    "delete_claim",
    "list_claims",
    "make_sub_paths",
    "mount_paths",
    "pod_mounts",
]

CLAIMS_DIR = ".volumes"  # not a DNS name: never a job's directory
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?")
# hostPath types whose directory the kubelet creates when it is missing ("" is the legacy default).
_CREATED_HOST_PATH_TYPES = ("", "DirectoryOrCreate")


class InvalidVolumeError(ValueError):
    """A volume or mount the local backend cannot place; the message names the field."""


class ClaimInUseError(RuntimeError):
    """A claim that a running job mounts cannot be deleted."""


@dataclass(frozen=True)
class Mount:
    """A container's volume mount placed on this machine."""

    path: str  # the mountPath the pod names
    local: str  # the volume's directory (or file) on this machine
    create: bool  # whether the backend creates ``local`` before the pod starts
    read_only: bool = False  # ``readOnly``: bound read-only where pods run in a mount namespace
    sub_path: str = ""  # ``subPath``: what is mounted is this, inside ``local`` (made if missing)

    @property
    def source(self) -> str:
        """What the pod sees at ``path``: the volume, or its ``subPath``."""
        return f"{self.local}/{self.sub_path}" if self.sub_path else self.local


@dataclass(frozen=True)
class ClaimVolume:
    """One persistent volume claim's local directory."""

    namespace: str
    name: str
    path: Path
    size_bytes: int
    jobs: tuple[str, ...]  # the jobs (under the same root) whose pods mount the claim


def _default_root() -> Path:
    # Imported here: every job's supervisor imports this module, and the configs' pydantic
    # models would cost each job's start a fifth of a second before its pods start.
    from trainer_sdk.configs import default_local_root

    return default_local_root()


def claims_root(root: Path | None = None) -> Path:
    """The directory holding every claim of the backend rooted at ``root`` (default: the local
    backend's default root)."""
    return (root if root is not None else _default_root()) / CLAIMS_DIR


def claim_path(namespace: str, claim: str, root: Path | None = None) -> Path:
    """The directory of ``persistentVolumeClaim`` ``claim`` in ``namespace``: what every local
    pod mounting that claim sees at its mount path."""
    if not _DNS_SUBDOMAIN.fullmatch(claim):
        raise InvalidVolumeError(
            f"persistentVolumeClaim.claimName: expected a lower-case DNS name, got {claim!r}"
        )
    if not _DNS_LABEL.fullmatch(namespace):
        raise InvalidVolumeError(
            f"metadata.namespace: expected a lower-case DNS label, got {namespace!r}"
        )
    return claims_root(root) / namespace / claim


def _relative(sub_path: str, where: str) -> str:
    """A ``subPath`` as Kubernetes accepts it: relative, never leaving the volume (symbolic
    links in it are resolved inside the volume when the pod starts: ``make_sub_paths``)."""
    if sub_path.startswith("/") or ".." in sub_path.split("/") or "\0" in sub_path:
        raise InvalidVolumeError(
            f"{where}.subPath: expected a relative path without '..', got {sub_path!r}"
        )
    return sub_path


def _mount_path(path: str, where: str) -> str:
    """A ``mountPath`` the local backend can place: absolute, without ``..`` (which could make
    its mount point outside the pod's namespace), no trailing slash."""
    if not path.startswith("/") or ".." in path.split("/") or "\0" in path:
        raise InvalidVolumeError(
            f"{where}.mountPath: expected an absolute path without '..', got {path!r}"
        )
    return path.rstrip("/") or "/"


def _volume_name(name: object, where: str) -> str:
    """A volume's name as Kubernetes accepts it: a DNS label (it names a directory here)."""
    if not isinstance(name, str) or len(name) > 63 or not _DNS_LABEL.fullmatch(name):
        raise InvalidVolumeError(f"{where}: expected a volume name (a DNS label), got {name!r}")
    return name


def pod_mounts(
    container: Mapping[str, Any],
    pod_spec: Mapping[str, Any],
    where: str,
    *,
    job_volumes: str,
    root: Path,
    namespace: str,
    claim_templates: Iterable[str] = (),
) -> list[Mount]:
    """Each of ``container``'s volume mounts with its local place (pure: nothing is created);
    InvalidVolumeError naming the field for a name, path or ``subPath`` Kubernetes would refuse
    or that could reach outside the job's volumes. ``claim_templates`` (the JobSet's
    ``volumeClaimPolicies`` template names) are volumes of every pod, as JobSet adds them."""
    volumes: dict[str, Mapping[str, Any]] = {
        _volume_name(name, "volumeClaimPolicies.templates.metadata.name"): {}
        for name in claim_templates
    }
    volumes.update(
        (_volume_name(volume.get("name"), f"volumes[{index}].name"), volume)
        for index, volume in enumerate(pod_spec.get("volumes") or [])
    )
    mounts = []
    for index, mount in enumerate(container.get("volumeMounts") or []):
        mount_where = f"{where}.volumeMounts[{index}]"
        name = _volume_name(mount.get("name"), f"{mount_where}.name")
        if name not in volumes:
            raise InvalidVolumeError(f"{mount_where}.name: no volume named {name!r} in the pod")
        volume = volumes[name]
        create = True
        if claim := volume.get("persistentVolumeClaim"):
            local = str(claim_path(namespace, str(claim.get("claimName", "")), root))
        elif host := volume.get("hostPath"):
            local = str(host.get("path", ""))
            if not local.startswith("/") or ".." in local.split("/"):
                raise InvalidVolumeError(
                    f"{where}: volume {name!r}: hostPath.path: expected an absolute path "
                    f"without '..', got {local!r}"
                )
            create = host.get("type", "") in _CREATED_HOST_PATH_TYPES
        else:
            local = f"{job_volumes}/{name}"
        sub_path = _relative(str(mount.get("subPath") or ""), mount_where).strip("/")
        path = _mount_path(str(mount.get("mountPath", "")), mount_where)
        mounts.append(Mount(path, local, create, bool(mount.get("readOnly")), sub_path))
    return mounts


def make_sub_paths(mounts: Iterable[Mount]) -> None:
    """Create each mount's ``subPath`` inside its volume (as the kubelet does when it is
    missing), following only links that stay in the volume; OSError naming it otherwise."""
    from trainer_sdk.backends.local.pod import mountns

    for mount in mounts:
        if mount.sub_path:
            os.close(mountns.open_beneath(mount.local, mount.sub_path, create=True))


def mount_paths(jobset: Mapping[str, Any]) -> list[str]:
    """Every mount path of the JobSet's containers, sorted."""
    found: set[str] = set()
    for job in jobset.get("spec", {}).get("replicatedJobs") or []:
        pod_spec = job.get("template", {}).get("spec", {}).get("template", {}).get("spec", {})
        for container in pod_spec.get("containers") or []:
            found.update(mount["mountPath"] for mount in container.get("volumeMounts") or [])
    return sorted(found)


def _claims_of(jobset: Mapping[str, Any]) -> set[tuple[str, str]]:
    namespace = str((jobset.get("metadata") or {}).get("namespace") or "default")
    found = set()
    for job in jobset.get("spec", {}).get("replicatedJobs") or []:
        pod_spec = job.get("template", {}).get("spec", {}).get("template", {}).get("spec", {})
        for volume in pod_spec.get("volumes") or []:
            if claim := volume.get("persistentVolumeClaim"):
                found.add((namespace, str(claim.get("claimName", ""))))
    return found


def _jobs_by_claim(root: Path) -> dict[tuple[str, str], list[str]]:
    users: dict[tuple[str, str], list[str]] = {}
    if not root.is_dir():
        return users
    for path in sorted(root.iterdir()):
        jobset = path / "jobset.json"
        if path.name.startswith(".") or not jobset.is_file():
            continue
        try:
            claims = _claims_of(read_json(jobset))
        except (OSError, ValueError):  # a damaged job hides only itself
            continue
        for claim in claims:
            users.setdefault(claim, []).append(path.name)
    return users


def _size(path: Path) -> int:
    total = 0
    for directory, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(directory, name)).st_size
            except OSError:  # removed while walking
                continue
    return total


def list_claims(root: Path | None = None) -> list[ClaimVolume]:
    """Every claim directory under ``root``, and every claim a job names, with its size and the
    jobs mounting it."""
    root = root if root is not None else _default_root()
    users = _jobs_by_claim(root)
    base = claims_root(root)
    present = {
        (namespace.name, claim.name)
        for namespace in (base.iterdir() if base.is_dir() else ())
        if namespace.is_dir()
        for claim in namespace.iterdir()
        if claim.is_dir()
    }
    claims = []
    for namespace, name in sorted(present | set(users)):
        path = base / namespace / name
        claims.append(
            ClaimVolume(namespace, name, path, _size(path), tuple(users.get((namespace, name), [])))
        )
    return claims


_ENDED_JOBSET: Final = ("Completed", "Failed", "Suspended")  # published once its pods ended


def _running(root: Path, name: str) -> bool:
    """Whether job ``name``'s pods may still run: it has not finished (nor has its JobSet, whose
    final status the supervisor publishes before it finishes) and its supervisor (or submitter)
    still lives."""
    job_dir = JobDir(root, name)
    try:
        state = read_json(job_dir.state)
    except (OSError, ValueError):
        state = {}
    conditions = (state.get("jobset") or {}).get("conditions") or []
    ended = any(c.get("type") in _ENDED_JOBSET and c.get("status") == "True" for c in conditions)
    return not (state.get("finished") or ended) and lock_held(job_dir.supervisor_lock)


def delete_claim(namespace: str, claim: str, root: Path | None = None) -> Path:
    """Remove the claim's directory and its data; refused while a running job mounts it."""
    root = root if root is not None else _default_root()
    path = claim_path(namespace, claim, root)
    running = [
        job for job in _jobs_by_claim(root).get((namespace, claim), []) if _running(root, job)
    ]
    if running:
        raise ClaimInUseError(
            f"persistentVolumeClaim {namespace}/{claim} is mounted by running jobs: "
            f"{', '.join(running)}; delete or stop them first"
        )
    if not path.is_dir():
        raise FileNotFoundError(f"no persistentVolumeClaim {namespace}/{claim} under {root}")
    shutil.rmtree(path)
    return path
