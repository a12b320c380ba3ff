"""The inputs of ``build`` as typed models: a TrainJob and its (Cluster)TrainingRuntime.

Drivers pass either the trainer_api models or their manifest dicts; the entry points parse a
dict once (leniently: fields the models do not define are kept, as for objects read back from a
cluster) and the plugins only ever see the models. Parse errors are field errors.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeAlias

import trainer_api
from trainer_api import ClusterTrainingRuntime, FieldError, TrainingRuntime, TrainJob

from trainer_runtime.errors import InvalidTrainJobError
from trainer_runtime.manifests import to_doc

__all__ = ["Runtime", "RuntimeInput", "TrainJobInput", "as_runtime", "as_trainjob", "with_doc"]

Runtime: TypeAlias = TrainingRuntime | ClusterTrainingRuntime
"""A runtime a TrainJob can refer to."""

TrainJobInput: TypeAlias = TrainJob | Mapping[str, Any]
"""What the entry points accept as a TrainJob: the model or its manifest dict."""

RuntimeInput: TypeAlias = Runtime | Mapping[str, Any]
"""What the entry points accept as a runtime: the model or its manifest dict."""


def as_trainjob(job: TrainJobInput) -> TrainJob:
    """``job`` as a TrainJob model; InvalidTrainJobError when a manifest dict does not parse."""
    if isinstance(job, TrainJob):
        return job
    parsed = _parse(job)
    if not isinstance(parsed, TrainJob):
        raise InvalidTrainJobError([FieldError("kind", f"expected TrainJob, got {parsed.kind}")])
    return parsed


def as_runtime(runtime: RuntimeInput) -> Runtime:
    """``runtime`` as a (Cluster)TrainingRuntime model; InvalidTrainJobError (with the runtime's
    field paths) when a manifest dict does not parse."""
    if isinstance(runtime, (TrainingRuntime, ClusterTrainingRuntime)):
        return runtime
    parsed = _parse(runtime)
    if not isinstance(parsed, (TrainingRuntime, ClusterTrainingRuntime)):
        message = f"expected TrainingRuntime or ClusterTrainingRuntime, got {parsed.kind}"
        raise InvalidTrainJobError([FieldError("kind", message)])
    return parsed


def with_doc(model: TrainJob | Runtime, given: object) -> dict[str, Any]:
    """The manifest dict of ``model``: a copy of ``given`` when that was the dict it came from
    (no second conversion), else the model's ``to_dict()``."""
    return to_doc(given) if isinstance(given, Mapping) else model.to_dict()


def _parse(doc: Mapping[str, Any]) -> trainer_api.ApiObject:
    try:
        return trainer_api.parse(doc, strict=False)
    except trainer_api.ValidationError as error:
        raise InvalidTrainJobError(error.errors) from error
