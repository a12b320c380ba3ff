"""``validate``: every schema and admission rule, for create and for update."""

from __future__ import annotations

from trainer_api._admission import runtime_errors, train_job_errors
from trainer_api._base import KubernetesObject
from trainer_api._errors import FieldError
from trainer_api._jobset import JobSetList
from trainer_api._object_checks import object_errors
from trainer_api._optimization import OptimizationJob, OptimizationJobList
from trainer_api._optimization_extras import optimization_job_errors
from trainer_api._runtime import (
    ClusterTrainingRuntime,
    ClusterTrainingRuntimeList,
    TrainingRuntime,
    TrainingRuntimeList,
)
from trainer_api._schema_check import schema_errors
from trainer_api._trainjob import TrainJob, TrainJobList

__all__ = ["validate"]

_LISTS = (
    TrainJobList,
    TrainingRuntimeList,
    ClusterTrainingRuntimeList,
    JobSetList,
    OptimizationJobList,
)


def validate(
    obj: KubernetesObject,
    old: KubernetesObject | None = None,
    runtime: TrainingRuntime | ClusterTrainingRuntime | None = None,
) -> list[FieldError]:
    """Every problem with ``obj`` (empty when valid), each with its field path.

    ``old`` is the stored object on update (enables the immutability rules); ``runtime``
    is the TrainJob's runtime (enables the rules that span both). Validate the object
    after ``apply_defaults``, as the API server does.
    """
    if old is not None and type(old) is not type(obj):
        raise TypeError(f"old must be a {type(obj).__name__}, got {type(old).__name__}")
    if isinstance(obj, _LISTS):
        return [
            FieldError(
                f"items[{index}].{error.field}" if error.field else f"items[{index}]", error.message
            )
            for index, item in enumerate(obj.items)
            for error in validate(item, runtime=runtime)
        ]
    errors = schema_errors(obj, old) + object_errors(obj)
    if isinstance(obj, TrainJob):
        errors.extend(train_job_errors(obj, old if isinstance(old, TrainJob) else None, runtime))
    elif isinstance(obj, (TrainingRuntime, ClusterTrainingRuntime)):
        errors.extend(runtime_errors(obj))
    elif isinstance(obj, OptimizationJob):
        errors.extend(optimization_job_errors(obj))
    return errors
