"""The runtime snapshot: a copy of the runtime a TrainJob was first built from.

Stored as JSON in the immutable ConfigMap ``<job>-runtime-snapshot`` owned by the TrainJob
(key ``runtime.json``); every later
build reads the runtime from it, so editing or deleting the runtime never changes a job that
already exists.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from trainer_runtime import constants, manifests
from trainer_runtime.errors import BuildError

__all__ = ["from_snapshot", "snapshot_name", "to_snapshot"]


def snapshot_name(job_name: str) -> str:
    """Name of the job's snapshot ConfigMap."""
    return job_name + constants.RUNTIME_SNAPSHOT_SUFFIX


def to_snapshot(job: Mapping[str, Any], runtime: Mapping[str, Any]) -> dict[str, Any]:
    """The snapshot ConfigMap of ``runtime`` for ``job``."""
    metadata = runtime.get("metadata") or {}
    kept = {
        key: metadata[key]
        for key in ("name", "namespace", "labels", "annotations")
        if metadata.get(key)
    }
    document = {
        "apiVersion": runtime.get("apiVersion"),
        "kind": runtime.get("kind"),
        "metadata": kept,
        "spec": runtime.get("spec"),
    }
    job_name = (job.get("metadata") or {}).get("name") or ""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": manifests.owned_metadata(
            job, snapshot_name(job_name), {constants.LABEL_TRAINJOB_NAME: job_name}
        ),
        "immutable": True,
        "data": {constants.RUNTIME_SNAPSHOT_KEY: json.dumps(document, indent=2) + "\n"},
    }


def from_snapshot(config_map: Mapping[str, Any]) -> dict[str, Any]:
    """The runtime manifest stored in a snapshot ConfigMap."""
    name = (config_map.get("metadata") or {}).get("name")
    text = (config_map.get("data") or {}).get(constants.RUNTIME_SNAPSHOT_KEY)
    if not isinstance(text, str):
        raise BuildError(
            f"ConfigMap {name!r}: data.{constants.RUNTIME_SNAPSHOT_KEY} is missing; "
            "delete the TrainJob and create it again"
        )
    try:
        document = json.loads(text)
    except ValueError as error:
        raise BuildError(
            f"ConfigMap {name!r}: data.{constants.RUNTIME_SNAPSHOT_KEY} is not JSON: {error}"
        ) from None
    if not isinstance(document, dict) or document.get("kind") not in constants.RUNTIME_KINDS:
        raise BuildError(
            f"ConfigMap {name!r}: data.{constants.RUNTIME_SNAPSHOT_KEY} "
            "does not hold a training runtime"
        )
    return document
