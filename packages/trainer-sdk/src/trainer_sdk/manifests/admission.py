"""A TrainJob manifest admitted at the SDK's edge: parsed once, strictly (user input: unknown
fields are errors), then ``trainer_runtime.admit``, what a cluster's API server and admission
webhook do. The local and the in-memory backends create their jobs from the result; field errors
come back as the SDK's ``InvalidTrainJobError``, and the webhook's warnings are logged as kubectl
prints them."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from trainer_sdk.errors import InvalidTrainJobError

if TYPE_CHECKING:
    from trainer_api import ApiObject, ClusterTrainingRuntime, TrainingRuntime, TrainJob
    from trainer_runtime import Admission

__all__ = ["admit", "parse_runtime", "parse_trainjob"]

_logger = logging.getLogger(__name__)


def _parse(document: Mapping[str, Any], what: str | None = None) -> ApiObject:
    """The parsed object; its field errors as they are, or, for a runtime (``what``), with a
    message that names which object's fields they are."""
    import trainer_api

    try:
        return trainer_api.parse(dict(document))
    except trainer_api.ValidationError as error:
        if what is None:
            raise InvalidTrainJobError(error.errors) from None
        raise InvalidTrainJobError(
            [trainer_api.FieldError(item.field, f"{what}: {item.message}") for item in error.errors]
        ) from None


def parse_trainjob(document: Mapping[str, Any]) -> TrainJob:
    """A TrainJob manifest as the model."""
    import trainer_api

    parsed = _parse(document)
    if not isinstance(parsed, trainer_api.TrainJob):
        message = f"TrainJob: expected kind TrainJob, got {parsed.kind}"
        raise InvalidTrainJobError([trainer_api.FieldError("kind", message)])
    return parsed


def parse_runtime(document: Mapping[str, Any]) -> TrainingRuntime | ClusterTrainingRuntime:
    """A runtime manifest as the model, its field errors naming the runtime."""
    import trainer_api

    what = str(document.get("kind", "runtime"))
    parsed = _parse(document, what)
    if not isinstance(parsed, (trainer_api.TrainingRuntime, trainer_api.ClusterTrainingRuntime)):
        message = f"{what}: expected kind TrainingRuntime or ClusterTrainingRuntime"
        raise InvalidTrainJobError([trainer_api.FieldError("kind", message)])
    return parsed


def admit(job: TrainJob, runtime: TrainingRuntime | ClusterTrainingRuntime) -> Admission:
    """``job`` admitted against ``runtime`` once (defaulted, every rule checked, its runtime
    info computed); InvalidTrainJobError with every field error."""
    import trainer_runtime

    admission = trainer_runtime.admit(job, runtime)
    if admission.errors:
        raise InvalidTrainJobError(admission.errors)
    for warning in admission.warnings:
        _logger.warning("Warning: %s", warning)  # what the cluster's admission webhook warns
    return admission
