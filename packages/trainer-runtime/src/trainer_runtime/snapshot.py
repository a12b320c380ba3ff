"""The runtime snapshot: a copy of the runtime a TrainJob was first built from.

Stored in the immutable ConfigMap ``<job>-runtime-snapshot`` owned by the TrainJob, in upstream's
format: the runtime as YAML under the data key ``runtime``. So a cluster can move between
upstream's controller and this one with TrainJobs running: each reads the other's snapshots.
Snapshots this project wrote earlier (JSON under ``runtime.json``) still read. Every later build
reads the runtime from the snapshot, so editing or deleting the runtime never changes a job that
already exists.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml
from trainer_api import TrainJob, dump_yaml

from trainer_runtime import constants, manifests
from trainer_runtime.errors import BuildError

__all__ = ["from_snapshot", "snapshot_name", "to_snapshot"]


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """Safe loader that keeps timestamps as the strings the Kubernetes API uses."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def snapshot_name(job_name: str) -> str:
    """Name of the job's snapshot ConfigMap."""
    return job_name + constants.RUNTIME_SNAPSHOT_SUFFIX


def to_snapshot(job: TrainJob, runtime: Mapping[str, Any]) -> dict[str, Any]:
    """The snapshot ConfigMap of ``runtime`` (a manifest dict) for ``job``."""
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
    job_name = job.metadata.name or ""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": manifests.owned_metadata(
            job, snapshot_name(job_name), {constants.LABEL_TRAINJOB_NAME: job_name}
        ),
        "immutable": True,
        "data": {constants.RUNTIME_SNAPSHOT_KEY: dump_yaml(document, sort_keys=True)},
    }


def from_snapshot(config_map: Mapping[str, Any]) -> dict[str, Any]:
    """The runtime manifest in a snapshot ConfigMap (upstream's format or our earlier one)."""
    name = (config_map.get("metadata") or {}).get("name")
    data = config_map.get("data") or {}
    key = next(
        (
            key
            for key in (constants.RUNTIME_SNAPSHOT_KEY, constants.LEGACY_RUNTIME_SNAPSHOT_KEY)
            if isinstance(data.get(key), str)
        ),
        None,
    )
    if key is None:
        raise BuildError(
            f"ConfigMap {name!r}: data.{constants.RUNTIME_SNAPSHOT_KEY} is missing; "
            "delete the TrainJob and create it again"
        )
    try:
        # JSON is YAML: one loader reads both formats.
        document = yaml.load(data[key], Loader=_Loader)
    except yaml.YAMLError as error:
        raise BuildError(f"ConfigMap {name!r}: data.{key} is not YAML: {error}") from None
    if not isinstance(document, dict) or document.get("kind") not in constants.RUNTIME_KINDS:
        raise BuildError(f"ConfigMap {name!r}: data.{key} does not hold a training runtime")
    return document
