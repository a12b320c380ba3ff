"""Where a BuiltinTrainer job's fine-tuned model is (pure): its engine writes it to
``constants.OUTPUT_PATH`` in the trainer pods, on the volume the runtime mounts there."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping
from typing import Any

from trainer_sdk import constants
from trainer_sdk.status.runtimes import claim_templates, trainer_container
from trainer_sdk.training.engines import engine_named

__all__ = ["cluster_output", "is_builtin", "output_in"]


def is_builtin(runtime: Mapping[str, Any]) -> bool:
    """Whether the runtime runs a fine-tuning engine (its framework label names one)."""
    labels = (runtime.get("metadata") or {}).get("labels") or {}
    return engine_named(str(labels.get(constants.RUNTIME_FRAMEWORK_LABEL, ""))) is not None


def output_in(mounts: Iterable[tuple[str, str]]) -> tuple[str, str] | None:
    """(the mount's name or place, the output's path inside it) for the first of ``mounts``
    (mount path, name or place) that holds ``OUTPUT_PATH``, or None."""
    for path, place in mounts:
        inside = posixpath.relpath(constants.OUTPUT_PATH, path)
        if not inside.startswith(".."):
            return place, "" if inside == "." else inside
    return None


def cluster_output(job_name: str, runtime: Mapping[str, Any]) -> str | None:
    """``pvc://CLAIM/PATH`` of a BuiltinTrainer job's output in a cluster: the claim JobSet makes
    from the runtime's volume claim template (``<template>-<JobSet>``, kept after the job), or a
    claim the pod mounts; None for another runtime or another kind of volume."""
    container = trainer_container(runtime)
    if not is_builtin(runtime) or container is None:
        return None
    mounts = [
        (m.get("mountPath", ""), m.get("name", "")) for m in container.get("volumeMounts") or ()
    ]
    found = output_in(mounts)
    if found is None:
        return None
    volume, inside = found
    spec = (runtime.get("spec") or {}).get("template", {}).get("spec") or {}
    if volume in claim_templates(spec):
        return f"pvc://{volume}-{job_name}/{inside}".rstrip("/")
    for job in spec.get("replicatedJobs") or ():
        pod = job.get("template", {}).get("spec", {}).get("template", {}).get("spec") or {}
        for item in pod.get("volumes") or ():
            claim = (item.get("persistentVolumeClaim") or {}).get("claimName")
            if item.get("name") == volume and claim:
                return f"pvc://{claim}/{inside}".rstrip("/")
    return None
