"""The drivers' edge: manifest dicts parsed once into the trainer_api models the core takes.

Everything past the edge (``admit``, ``build``, ``render``, the plugins) takes models only. A
driver that holds manifest dicts (objects read back from a cluster, a local job's files) parses
them here, leniently (fields the models do not define are kept, as for objects read back from a
cluster); a dict that does not parse is an InvalidTrainJobError with its field errors.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeAlias

import trainer_api
from trainer_api import ClusterTrainingRuntime, FieldError, TrainingRuntime, TrainJob

from trainer_runtime.errors import InvalidTrainJobError

__all__ = ["Runtime", "parse_runtime", "parse_trainjob"]

Runtime: TypeAlias = TrainingRuntime | ClusterTrainingRuntime
"""A runtime a TrainJob can refer to."""


def parse_trainjob(doc: Mapping[str, Any]) -> TrainJob:
    """``doc`` as a TrainJob model; InvalidTrainJobError when it does not parse."""
    parsed = _parse(doc)
    if not isinstance(parsed, TrainJob):
        raise InvalidTrainJobError([FieldError("kind", f"expected TrainJob, got {parsed.kind}")])
    return parsed


def parse_runtime(doc: Mapping[str, Any]) -> Runtime:
    """``doc`` as a (Cluster)TrainingRuntime model; InvalidTrainJobError (with the runtime's
    field paths) when it does not parse."""
    parsed = _parse(doc)
    if not isinstance(parsed, (TrainingRuntime, ClusterTrainingRuntime)):
        message = f"expected TrainingRuntime or ClusterTrainingRuntime, got {parsed.kind}"
        raise InvalidTrainJobError([FieldError("kind", message)])
    return parsed


def _parse(doc: Mapping[str, Any]) -> trainer_api.ApiObject:
    try:
        return trainer_api.parse(doc, strict=False)
    except trainer_api.ValidationError as error:
        raise InvalidTrainJobError(error.errors) from error
