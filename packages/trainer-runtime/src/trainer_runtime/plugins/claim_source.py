"""ClaimSource: an initializer whose storage URI is ``pvc://CLAIM/PATH`` copies from a claim.

A model or data set already in the cluster (on a PersistentVolumeClaim) feeds a fine-tune
without a download: the initializer's pod mounts the claim read-only at ``/mnt/source`` (volume
``source``) and its ``STORAGE_URI`` becomes the path there, ``/mnt/source/PATH``, which the
initializer copies as it copies any path. The TrainJob keeps ``pvc://CLAIM/PATH``. On the local
backend the claim is the named local volume (``trainer volumes``), the same way.
"""

from __future__ import annotations

from typing import Final

import trainer_api
from trainer_api import FieldError, TrainJob

from trainer_runtime import constants, podspecs
from trainer_runtime.info import PodSet, RuntimeInfo
from trainer_runtime.views import ContainerDoc

__all__ = ["CLAIM_SCHEME", "MOUNT_PATH", "VOLUME_NAME", "ClaimSource", "claim_and_path"]

CLAIM_SCHEME: Final = "pvc://"
MOUNT_PATH: Final = "/mnt/source"
VOLUME_NAME: Final = "source"
_STEPS: Final = (
    (trainer_api.DATASET_INITIALIZER, "dataset"),
    (trainer_api.MODEL_INITIALIZER, "model"),
)


def claim_and_path(uri: str) -> tuple[str, str] | None:
    """(CLAIM, PATH) of a valid ``pvc://CLAIM[/PATH]`` (PATH relative, without ``..``), else
    None."""
    if not uri.startswith(CLAIM_SCHEME):
        return None
    claim, _, path = uri.removeprefix(CLAIM_SCHEME).partition("/")
    parts = [part for part in path.split("/") if part]
    if not trainer_api.is_dns1123_subdomain(claim) or ".." in parts or "\0" in path:
        return None
    return claim, "/".join(parts)


def _sources(info: RuntimeInfo) -> list[tuple[str, PodSet, ContainerDoc, str]]:
    """(field name, pod set, initializer container, URI) of each initializer reading a claim."""
    found = []
    for step, field in _STEPS:
        pod_set = info.pod_set_by_ancestor(step)
        container = pod_set.container(step) if pod_set is not None else None
        if pod_set is None or container is None:
            continue
        uri = podspecs.env_value(container, constants.INITIALIZER_ENV_STORAGE_URI)
        if isinstance(uri, str) and uri.startswith(CLAIM_SCHEME):
            found.append((field, pod_set, container, uri))
    return found


class ClaimSource:
    """Mounts the claim an initializer's ``pvc://`` storage URI names."""

    name = "ClaimSource"

    def validate(self, info: RuntimeInfo, job: TrainJob) -> list[FieldError]:
        """A claim name and a relative path; a free volume name in the initializer's pod."""
        errors = []
        for field, pod_set, _, uri in _sources(info):
            where = f"spec.initializer.{field}.storageUri"
            if claim_and_path(uri) is None:
                errors.append(
                    FieldError(
                        where,
                        "expected pvc://CLAIM/PATH (CLAIM a PersistentVolumeClaim name, PATH "
                        f"relative without '..'), got {uri!r}",
                    )
                )
            if any(volume.get("name") == VOLUME_NAME for volume in pod_set.volumes):
                errors.append(
                    FieldError(
                        where, f"the {field} initializer already has a volume {VOLUME_NAME!r}"
                    )
                )
        return errors

    def enforce_pod_spec(self, info: RuntimeInfo, job: TrainJob) -> None:
        """The claim, read-only, on each such initializer; its STORAGE_URI the path there."""
        for _, pod_set, container, uri in _sources(info):
            found = claim_and_path(uri)
            if found is None:  # refused by validate
                continue
            claim, path = found
            podspecs.upsert_volume(
                pod_set.pod_spec,
                {
                    "name": VOLUME_NAME,
                    "persistentVolumeClaim": {"claimName": claim, "readOnly": True},
                },
            )
            podspecs.upsert_volume_mount(
                container, {"name": VOLUME_NAME, "mountPath": MOUNT_PATH, "readOnly": True}
            )
            source = f"{MOUNT_PATH}/{path}".rstrip("/")
            podspecs.upsert_env(
                container, [podspecs.value_env(constants.INITIALIZER_ENV_STORAGE_URI, source)]
            )
