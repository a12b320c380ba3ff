"""Manifest dicts: conversion from typed models and the metadata of owned objects."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import trainer_api
from trainer_api import TrainJob

__all__ = ["owned_metadata", "owner_reference", "to_doc"]


def to_doc(obj: Any) -> dict[str, Any]:
    """The camelCase manifest dict of a typed model (``to_dict()``) or a copy of a mapping."""
    if obj is None:
        return {}
    if isinstance(obj, Mapping):
        return copy.deepcopy(dict(obj))
    to_dict = getattr(obj, "to_dict", None)
    if to_dict is None:
        raise TypeError(
            f"expected a trainer_api model or a manifest dict, got {type(obj).__name__}"
        )
    return dict(to_dict())


def owner_reference(job: TrainJob) -> dict[str, Any]:
    """The controller owner reference to the TrainJob (``uid`` only when the job has one)."""
    reference: dict[str, Any] = {
        "apiVersion": trainer_api.TRAINER_API_VERSION,
        "kind": trainer_api.TRAIN_JOB_KIND,
        "name": job.metadata.name,
    }
    if job.metadata.uid:
        reference["uid"] = job.metadata.uid
    reference["controller"] = True
    reference["blockOwnerDeletion"] = True
    return reference


def owned_metadata(
    job: TrainJob, name: str, labels: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """Metadata for an object named ``name`` in the job's namespace, owned by the job."""
    namespace = job.metadata.namespace
    metadata: dict[str, Any] = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    if labels:
        metadata["labels"] = dict(labels)
    metadata["ownerReferences"] = [owner_reference(job)]
    return metadata
